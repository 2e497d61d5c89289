// The PimCounters model as the guest driver drives it (guest/driver): hottest frames
// with types, decay, miss counters in each CPU's cycles, throttle spacing, registers.
#include "pimcloud/counters_model.hh"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace pimcloud::counters
{
namespace
{

constexpr Tick kMs = 1'000'000'000;

DeviceConfig twoStacks()
{
    DeviceConfig c;
    // Stack 0: frames 0x100..0x1ff and 0x400..0x4ff (cut by a hole); stack 1: 0x800..
    c.stacks = {{{0x100, 0x100}, {0x400, 0x100}}, {{0x800, 0x200}}};
    c.stackNodes = {1, 2};
    c.cpuPeriods = {416, 500};  // 2.4 GHz host core, 2 GHz PIM core
    c.decayPeriod = 10 * kMs;
    return c;
}

std::uint64_t addr(std::uint64_t frame, std::uint64_t offset = 0)
{
    return frame << kFrameShift | offset;
}

TEST(StackCounters, SlotsCoverEveryRangeInOrder)
{
    const StackCounters s({{0x100, 4}, {0x400, 2}});
    EXPECT_EQ(s.frames(), 6U);
    EXPECT_EQ(s.slot(0x100), 0U);
    EXPECT_EQ(s.slot(0x103), 3U);
    EXPECT_EQ(s.slot(0x401), 5U);
    EXPECT_FALSE(s.slot(0x104).has_value());
    EXPECT_FALSE(s.slot(0x402).has_value());
    EXPECT_EQ(StackCounters::bytesPerFrame(), 8U);
}

TEST(StackCounters, HottestAreOrderedByCountThenFrameAndSkipUntouched)
{
    StackCounters s({{0x100, 8}});
    for (int i = 0; i < 5; ++i)
        s.record(3, 0, false, 0);
    for (int i = 0; i < 5; ++i)
        s.record(1, 0, false, 0);
    s.record(6, 0, false, 0);
    const auto top = s.hottest(10, 0);
    ASSERT_EQ(top.size(), 3U);
    EXPECT_EQ(top[0].frame, 0x101U);
    EXPECT_EQ(top[1].frame, 0x103U);
    EXPECT_EQ(top[2].frame, 0x106U);
    EXPECT_EQ(top[0].count, 5U);
    EXPECT_EQ(s.hottest(1, 0).size(), 1U);
}

TEST(StackCounters, TypesArePrivateOrSharedAndReadOnlyOrWritten)
{
    StackCounters s({{0, 4}});
    s.record(0, 3, false, 0);  // one CPU, reads: private read-only
    s.record(0, 3, false, 0);
    s.record(1, 3, false, 0);  // two CPUs: shared
    s.record(1, 7, false, 0);
    s.record(2, 3, true, 0);   // written
    s.record(3, kNoCpu, true, 0);  // a writeback: written, no CPU, not shared
    const auto top = s.hottest(4, 0);
    ASSERT_EQ(top.size(), 4U);
    EXPECT_EQ(top[0].frame, 0U);
    EXPECT_EQ(top[0].flags, 0U);
    EXPECT_EQ(top[0].firstCpu, 3U);
    EXPECT_EQ(top[1].flags, PIMC_FRAME_SHARED);
    EXPECT_EQ(top[2].flags, PIMC_FRAME_WRITTEN);
    EXPECT_EQ(top[3].flags, PIMC_FRAME_WRITTEN);
    EXPECT_EQ(top[3].firstCpu, kNoCpu);
}

TEST(StackCounters, CountsHalveEachEpochAndVanishAfterThirtyTwo)
{
    StackCounters s({{0, 2}});
    for (int i = 0; i < 64; ++i)
        s.record(0, 0, false, 5);
    EXPECT_EQ(s.hottest(1, 5)[0].count, 64U);
    EXPECT_EQ(s.hottest(1, 6)[0].count, 32U);
    EXPECT_EQ(s.hottest(1, 11)[0].count, 1U);
    EXPECT_TRUE(s.hottest(1, 12).empty());
    EXPECT_TRUE(s.hottest(1, 5 + 40).empty());
    s.record(0, 0, false, 7);  // 64 -> 16 then one more
    EXPECT_EQ(s.hottest(1, 7)[0].count, 17U);
}

TEST(StackCounters, SaveAndRestoreKeepEverything)
{
    StackCounters s({{0x10, 3}});
    s.record(0, 2, true, 1);
    s.record(2, 4, false, 1);
    s.record(2, 5, false, 1);
    StackCounters t({{0x10, 3}});
    t.restore(s.save());
    EXPECT_EQ(t.hottest(3, 1), s.hottest(3, 1));
    EXPECT_THROW(StackCounters({{0, 2}}).restore(s.save()), std::invalid_argument);
}

// The test program in miniature: a known hot set over both stacks, some frames
// shared between a host and a PIM CPU, some written, among many cold accesses.
TEST(Device, HottestQueryFindsAKnownHotSetWithTypes)
{
    Device d(twoStacks());
    std::mt19937_64 rng(1);
    std::set<std::uint64_t> hot;
    for (std::uint64_t f = 0x800; f < 0x800 + 40; ++f)
        hot.insert(f);
    std::uniform_int_distribution<std::uint64_t> cold(0x800, 0x800 + 0x1FF);
    for (int round = 0; round < 50; ++round) {
        for (std::uint64_t f : hot)
            d.recordAccess(addr(f, 64 * (round % 64)), f % 2 ? 0 : 1, f % 5 == 0, kMs);
        for (int i = 0; i < 20; ++i)
            d.recordAccess(addr(cold(rng)), 0, false, kMs);
    }
    d.write(PIMC_QUERY_STACK, 1, 2 * kMs);
    d.write(PIMC_QUERY_N, 40, 2 * kMs);
    d.write(PIMC_QUERY_CMD, PIMC_CMD_HOTTEST, 2 * kMs);
    // Scanning 0x200 frames at 1 ns each: busy for 512 ns.
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 2 * kMs + 100), PIMC_STATUS_BUSY);
    EXPECT_EQ(d.read(PIMC_QUERY_RESULTS, 2 * kMs + 100), 0U);
    const Tick done = 2 * kMs + 512'000;
    EXPECT_EQ(d.read(PIMC_QUERY_READY_PS, done), done);
    ASSERT_EQ(d.read(PIMC_QUERY_STATUS, done), PIMC_STATUS_DONE);
    ASSERT_EQ(d.read(PIMC_QUERY_RESULTS, done), 40U);
    std::size_t found = 0;
    for (std::uint64_t i = 0; i < 40; ++i) {
        const std::uint64_t frame = d.read(PIMC_RESULT_BASE + i * PIMC_RESULT_STRIDE, done);
        const std::uint64_t word = d.read(PIMC_RESULT_BASE + i * PIMC_RESULT_STRIDE + 8, done);
        found += hot.count(frame);
        EXPECT_EQ(((word >> 48) & PIMC_FRAME_WRITTEN) != 0, frame % 5 == 0) << frame;
        EXPECT_GE(word & 0xFFFFFFFFU, 50U);
    }
    EXPECT_EQ(found, 40U);
}

TEST(Device, QueriesOfAMissingStackOrTooManyFramesFail)
{
    Device d(twoStacks());
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 0), PIMC_STATUS_IDLE);
    d.write(PIMC_QUERY_STACK, 2, 0);
    d.write(PIMC_QUERY_N, 1, 0);
    d.write(PIMC_QUERY_CMD, PIMC_CMD_HOTTEST, 0);
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 0), PIMC_STATUS_ERROR);
    d.write(PIMC_QUERY_STACK, 0, 0);
    d.write(PIMC_QUERY_N, 4097, 0);
    d.write(PIMC_QUERY_CMD, PIMC_CMD_HOTTEST, 0);
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 0), PIMC_STATUS_ERROR);
    d.write(PIMC_QUERY_N, 4, 0);
    d.write(PIMC_QUERY_CMD, 99, 0);
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 0), PIMC_STATUS_ERROR);
}

TEST(Device, ResetClearsOneStackOnly)
{
    Device d(twoStacks());
    d.recordAccess(addr(0x100), 0, false, 0);
    d.recordAccess(addr(0x800), 0, false, 0);
    EXPECT_FALSE(d.recordAccess(addr(0x300), 0, false, 0));  // in no stack
    d.write(PIMC_QUERY_STACK, 0, 0);
    d.write(PIMC_QUERY_CMD, PIMC_CMD_RESET, 0);
    EXPECT_EQ(d.read(PIMC_QUERY_STATUS, 0), PIMC_STATUS_DONE);
    EXPECT_TRUE(d.stack(0).hottest(4, 0).empty());
    EXPECT_EQ(d.stack(1).hottest(4, 0).size(), 1U);
}

TEST(Device, IdentityRegistersDescribeTheBlock)
{
    const Device d(twoStacks());
    EXPECT_EQ(d.read(PIMC_MAGIC, 0), PIMCLOUD_COUNTERS_MAGIC);
    EXPECT_EQ(d.read(PIMC_NUM_STACKS, 0), 2U);
    EXPECT_EQ(d.read(PIMC_NUM_CPUS, 0), 2U);
    EXPECT_EQ(d.read(PIMC_FRAME_SHIFT, 0), 12U);
    EXPECT_EQ(d.read(PIMC_STACK_BASE + PIMC_STACK_STRIDE + PIMC_STACK_FRAMES, 0), 0x200U);
    EXPECT_EQ(d.read(PIMC_STACK_BASE + PIMC_STACK_FRAMES, 0), 0x200U);
    EXPECT_EQ(d.read(PIMC_STACK_BASE + PIMC_STACK_STRIDE + PIMC_STACK_NODE, 0), 2U);
    EXPECT_EQ(d.read(PIMC_NOW_PS, 1234), 1234U);
    EXPECT_EQ(blockSize(twoStacks().maxQuery), 0x10000U + 4096U * 16U);
}

TEST(Device, MissCountersReadInEachCpusCycles)
{
    Device d(twoStacks());
    d.missCounters().record(0, 100 * 416);
    d.missCounters().record(0, 50 * 416);
    d.missCounters().record(1, 80 * 500);
    const auto cpu = [](std::uint64_t c, std::uint64_t reg) {
        return PIMC_CPU_BASE + c * PIMC_CPU_STRIDE + reg;
    };
    EXPECT_EQ(d.read(cpu(0, PIMC_CPU_MISSES), 0), 2U);
    EXPECT_EQ(d.read(cpu(0, PIMC_CPU_OUTSTANDING), 0), 150U);
    EXPECT_EQ(d.read(cpu(1, PIMC_CPU_OUTSTANDING), 0), 80U);
    EXPECT_EQ(d.read(cpu(1, PIMC_CPU_CYCLES), 1'000'000), 2000U);
    EXPECT_EQ(d.read(cpu(2, PIMC_CPU_MISSES), 0), 0U);  // no such CPU
}

TEST(BandwidthThrottle, LevelsSpaceRequestsAndCapBandwidthMonotonically)
{
    BandwidthThrottle t(2, 10, 2'000);
    EXPECT_EQ(t.admit(0, 100), 100U);  // level 0: never delayed
    EXPECT_EQ(t.admit(0, 100), 100U);
    ASSERT_TRUE(t.setLevel(0, 3));
    EXPECT_FALSE(t.setLevel(0, 10));
    EXPECT_EQ(t.levelOf(0), 3U);
    EXPECT_EQ(t.admit(0, 1'000), 1'000U);
    EXPECT_EQ(t.admit(0, 1'000), 7'000U);  // 3 * 2 ns later
    EXPECT_EQ(t.admit(0, 20'000), 20'000U);
    EXPECT_EQ(t.admit(1, 20'000), 20'000U);  // the other CPU is free
    double previous = t.ceilingBytesPerSecond(0, 64);
    for (unsigned l = 1; l < t.levels(); ++l) {
        const double now = t.ceilingBytesPerSecond(l, 64);
        EXPECT_LT(now, previous);
        previous = now;
    }
    EXPECT_DOUBLE_EQ(t.ceilingBytesPerSecond(1, 64), 32e9);  // 64 B per 2 ns
}

TEST(Device, ThrottleRegistersSetLevelsWithinRange)
{
    Device d(twoStacks());
    const std::uint64_t reg = PIMC_CPU_BASE + PIMC_CPU_STRIDE + PIMC_CPU_THROTTLE;
    d.write(reg, 4, 0);
    EXPECT_EQ(d.read(reg, 0), 4U);
    d.write(reg, 99, 0);  // no such level: unchanged
    EXPECT_EQ(d.read(reg, 0), 4U);
    EXPECT_EQ(d.bandwidthThrottle().levelOf(1), 4U);
}

TEST(Device, RegistersSurviveSaveAndRestore)
{
    Device d(twoStacks());
    d.recordAccess(addr(0x801), 1, true, 0);
    d.write(PIMC_QUERY_STACK, 1, 0);
    d.write(PIMC_QUERY_N, 2, 0);
    d.write(PIMC_QUERY_CMD, PIMC_CMD_HOTTEST, 0);
    Device e(twoStacks());
    e.restoreRegisters(d.saveRegisters());
    const Tick later = kMs;
    EXPECT_EQ(e.read(PIMC_QUERY_STATUS, later), PIMC_STATUS_DONE);
    EXPECT_EQ(e.read(PIMC_QUERY_RESULTS, later), 1U);
    EXPECT_EQ(e.read(PIMC_RESULT_BASE, later), 0x801U);
    EXPECT_EQ(e.read(PIMC_RESULT_BASE + 8, later), d.read(PIMC_RESULT_BASE + 8, later));
}

TEST(Device, BadConfigurationsAreNamed)
{
    DeviceConfig c = twoStacks();
    c.stackNodes = {1};
    EXPECT_NE(checkConfig(c).value_or("").find("stack_nodes"), std::string::npos);
    c = twoStacks();
    c.maxQuery = 0;
    EXPECT_THROW(Device{c}, std::invalid_argument);
    c = twoStacks();
    c.stacks.clear();
    EXPECT_TRUE(checkConfig(c).has_value());
}

} // namespace
} // namespace pimcloud::counters
