// The HPET register file as Linux drives it (arch/x86/kernel/hpet.c): 32-bit reads of
// the period and counter, stop/reset/start, channel sanitising.
#include "pimcloud/hpet_model.hh"

#include <gtest/gtest.h>

namespace pimcloud::hpet
{
namespace
{

constexpr std::uint64_t kTenNsInFs = 10'000'000;

TEST(HpetModel, CapabilitiesCarryPeriodTimersAnd64BitCounter)
{
    const Registers hpet(kTenNsInFs, 3);
    const std::uint64_t caps = hpet.read(kCapabilities, 8, 0);
    EXPECT_EQ(caps >> 32, kTenNsInFs);
    EXPECT_EQ((caps >> 8) & 0x1F, 2U);  // number of the last timer
    EXPECT_NE(caps & kCounter64Bit, 0U);
    EXPECT_EQ(caps & (1ULL << 15), 0U);  // no legacy replacement
    EXPECT_EQ(hpet.read(kCapabilities + 4, 4, 0), kTenNsInFs);  // HPET_PERIOD
    EXPECT_EQ(hpet.read(kCapabilities, 4, 0), caps & 0xFFFF'FFFFULL);
}

TEST(HpetModel, CounterIsFrozenUntilEnabledThenCountsPeriods)
{
    Registers hpet(kTenNsInFs, 3);
    EXPECT_EQ(hpet.read(kMainCounter, 8, 5'000'000), 0U);
    hpet.write(kConfig, 4, kConfigEnable, 1'000'000);
    EXPECT_EQ(hpet.read(kConfig, 4, 1'000'000), kConfigEnable);
    EXPECT_EQ(hpet.read(kMainCounter, 8, 1'000'000), 0U);
    // 1 us later: 100 periods of 10 ns.
    EXPECT_EQ(hpet.read(kMainCounter, 4, 2'000'000), 100U);
    EXPECT_EQ(hpet.read(kMainCounter, 4, 2'009'999), 100U);
    EXPECT_EQ(hpet.read(kMainCounter, 4, 2'010'000), 101U);
}

TEST(HpetModel, StopResetStartAsLinuxRestartsTheCounter)
{
    Registers hpet(kTenNsInFs, 3);
    hpet.write(kConfig, 4, kConfigEnable, 0);
    const std::uint64_t stopped_at = 50'000'000;  // 50 us
    hpet.write(kConfig, 4, 0, stopped_at);
    EXPECT_EQ(hpet.read(kMainCounter, 8, stopped_at + 1'000'000), 5000U);
    hpet.write(kMainCounter, 4, 0, stopped_at + 2'000'000);
    hpet.write(kMainCounter + 4, 4, 0, stopped_at + 2'000'000);
    EXPECT_EQ(hpet.read(kMainCounter, 8, stopped_at + 3'000'000), 0U);
    hpet.write(kConfig, 4, kConfigEnable, stopped_at + 4'000'000);
    EXPECT_EQ(hpet.read(kMainCounter, 8, stopped_at + 4'000'000 + 20'000), 2U);
}

TEST(HpetModel, HalfWritesKeepTheOtherHalf)
{
    Registers hpet(kTenNsInFs, 3);
    hpet.write(kMainCounter, 8, 0x1111'2222'3333'4444ULL, 0);
    hpet.write(kMainCounter, 4, 0xAAAA'BBBBULL, 0);
    EXPECT_EQ(hpet.read(kMainCounter, 8, 0), 0x1111'2222'AAAA'BBBBULL);
    hpet.write(kMainCounter + 4, 4, 0x5555'6666ULL, 0);
    EXPECT_EQ(hpet.read(kMainCounter, 8, 0), 0x5555'6666'AAAA'BBBBULL);
    EXPECT_EQ(hpet.read(kMainCounter + 4, 4, 0), 0x5555'6666ULL);
}

TEST(HpetModel, TimersKeepWritableBitsAndThe64BitCapability)
{
    Registers hpet(kTenNsInFs, 3);
    const std::uint64_t timer1 = kTimerBase + kTimerStride;
    EXPECT_EQ(hpet.read(timer1, 4, 0), kTimer64BitCap);
    hpet.write(timer1, 4, 0xFFFF'FFFFULL, 0);
    // Linux's sanitised channel config: only known bits, no FSB capability, no route cap.
    EXPECT_EQ(hpet.read(timer1, 4, 0), kTimer64BitCap | kTimerWritable);
    EXPECT_EQ(hpet.read(timer1 + 4, 4, 0), 0U);
    hpet.write(timer1 + 8, 8, 1234, 0);
    EXPECT_EQ(hpet.read(timer1 + 8, 8, 0), 1234U);
    // Beyond the last timer and unknown registers: read as zero, writes ignored.
    const std::uint64_t beyond = kTimerBase + 3 * kTimerStride;
    hpet.write(beyond, 8, 77, 0);
    EXPECT_EQ(hpet.read(beyond, 8, 0), 0U);
    EXPECT_EQ(hpet.read(kInterruptStatus, 8, 0), 0U);
}

TEST(HpetModel, LegacyReplacementCannotBeEnabled)
{
    Registers hpet(kTenNsInFs, 3);
    hpet.write(kConfig, 4, 0x3, 0);
    EXPECT_EQ(hpet.read(kConfig, 4, 0), kConfigEnable);
}

TEST(HpetModel, SaveAndRestoreKeepTheCount)
{
    Registers hpet(kTenNsInFs, 3);
    hpet.write(kConfig, 4, kConfigEnable, 0);
    hpet.write(kTimerBase + 8, 8, 99, 0);
    Registers restored(kTenNsInFs, 3);
    restored.restore(hpet.save());
    EXPECT_EQ(restored.read(kMainCounter, 8, 1'000'000), hpet.read(kMainCounter, 8, 1'000'000));
    EXPECT_EQ(restored.read(kTimerBase + 8, 8, 0), 99U);
}

TEST(HpetModel, ParametersLinuxWouldRejectAreNamed)
{
    EXPECT_FALSE(checkParameters(kTenNsInFs, 3).has_value());
    const auto too_slow = checkParameters(200'000'000, 3);
    ASSERT_TRUE(too_slow.has_value());
    EXPECT_NE(too_slow->find("outside"), std::string::npos);
    EXPECT_TRUE(checkParameters(1'500, 3).has_value());   // below 0.1 ns
    EXPECT_TRUE(checkParameters(100'500, 3).has_value());  // not whole picoseconds
    EXPECT_TRUE(checkParameters(kTenNsInFs, 1).has_value());
    EXPECT_TRUE(checkParameters(kTenNsInFs, 33).has_value());
}

} // namespace
} // namespace pimcloud::hpet
