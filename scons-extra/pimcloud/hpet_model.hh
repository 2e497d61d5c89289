// The register file of a counter-only HPET (IA-PC HPET spec 1.0a), free of gem5.
//
// Why the PIM server needs it: gem5's x86 TSC counts the cycles of the CPU that
// reads it, so host cores (2.4 GHz) and PIM cores (2 GHz) see TSCs running at
// different rates and Linux timekeeping on the TSC breaks across clusters. The HPET
// main counter is one clock for every CPU; the guest selects it with
// `clocksource=hpet`. Its timers never fire: they advertise neither legacy
// replacement nor FSB delivery, so Linux keeps the local APIC timers for events.
//
// Time is given by the caller in picoseconds (gem5 ticks). C++17: gem5 compiles it.
#ifndef PIMCLOUD_HPET_MODEL_HH
#define PIMCLOUD_HPET_MODEL_HH

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pimcloud::hpet
{

inline constexpr std::uint64_t kCapabilities = 0x000;
inline constexpr std::uint64_t kConfig = 0x010;
inline constexpr std::uint64_t kInterruptStatus = 0x020;
inline constexpr std::uint64_t kMainCounter = 0x0F0;
inline constexpr std::uint64_t kTimerBase = 0x100;
inline constexpr std::uint64_t kTimerStride = 0x20;
inline constexpr std::uint64_t kRegisterBlockSize = 0x400;

inline constexpr std::uint64_t kConfigEnable = 1;          // ENABLE_CNF
inline constexpr std::uint64_t kCounter64Bit = 1ULL << 13;  // COUNT_SIZE_CAP
inline constexpr std::uint64_t kTimer64BitCap = 1ULL << 5;  // Tn_SIZE_CAP
// Tn_CONF bits software may set: level, enable, periodic, value-set, 32-bit mode,
// route. Writing them changes nothing else here because no interrupt is ever raised.
inline constexpr std::uint64_t kTimerWritable = 0x7F4E;
inline constexpr std::uint32_t kVendorId = 0x8086;
// Linux accepts 0.1 ns .. 100 ns (HPET_MIN_PERIOD/HPET_MAX_PERIOD, in femtoseconds).
inline constexpr std::uint64_t kMinPeriodFs = 100'000;
inline constexpr std::uint64_t kMaxPeriodFs = 100'000'000;

// Why a parameter set is unusable, or nothing.
inline std::optional<std::string> checkParameters(std::uint64_t period_fs, unsigned timers)
{
    if (period_fs < kMinPeriodFs || period_fs > kMaxPeriodFs)
        return "counter period " + std::to_string(period_fs) +
               " fs is outside 100000..100000000 fs (0.1..100 ns), which Linux rejects";
    if (period_fs % 1000 != 0)
        return "counter period " + std::to_string(period_fs) +
               " fs is not a whole number of picoseconds (gem5 ticks)";
    if (timers < 3 || timers > 32)
        return "HPET with " + std::to_string(timers) +
               " timers: the HPET specification allows 3..32";
    return std::nullopt;
}

class Registers
{
  public:
    Registers(std::uint64_t period_fs, unsigned timers)
        : periodPs(period_fs / 1000), periodFs(period_fs), timerConfig(timers, kTimer64BitCap),
          timerComparator(timers, ~0ULL)
    {
    }

    // The main counter at time now_ps: frozen while disabled, counting while enabled.
    std::uint64_t counter(std::uint64_t now_ps) const
    {
        if (!(config & kConfigEnable))
            return counterBase;
        return counterBase + (now_ps - enabledAtPs) / periodPs;
    }

    // A 4- or 8-byte read at `offset` inside the block; unknown offsets read 0.
    std::uint64_t read(std::uint64_t offset, unsigned size, std::uint64_t now_ps) const
    {
        const std::uint64_t aligned = offset & ~7ULL;
        const std::uint64_t value = register64(aligned, now_ps);
        if (size == 8)
            return value;
        return (offset & 4) ? value >> 32 : value & 0xFFFF'FFFFULL;
    }

    // A 4- or 8-byte write; a 4-byte write changes only its half of the register.
    void write(std::uint64_t offset, unsigned size, std::uint64_t value, std::uint64_t now_ps)
    {
        const std::uint64_t aligned = offset & ~7ULL;
        std::uint64_t merged = value;
        if (size == 4) {
            const std::uint64_t old = register64(aligned, now_ps);
            merged = (offset & 4) ? (old & 0xFFFF'FFFFULL) | (value << 32)
                                  : (old & ~0xFFFF'FFFFULL) | (value & 0xFFFF'FFFFULL);
        }
        setRegister64(aligned, merged, now_ps);
    }

    // State that a checkpoint must keep (the rest is derived from parameters).
    struct Saved
    {
        std::uint64_t config;
        std::uint64_t counterBase;
        std::uint64_t enabledAtPs;
        std::vector<std::uint64_t> timerConfig;
        std::vector<std::uint64_t> timerComparator;
    };
    Saved save() const
    {
        return {config, counterBase, enabledAtPs, timerConfig, timerComparator};
    }
    void restore(const Saved &saved)
    {
        config = saved.config;
        counterBase = saved.counterBase;
        enabledAtPs = saved.enabledAtPs;
        if (saved.timerConfig.size() == timerConfig.size())
            timerConfig = saved.timerConfig;
        if (saved.timerComparator.size() == timerComparator.size())
            timerComparator = saved.timerComparator;
    }

  private:
    std::uint64_t capabilities() const
    {
        const std::uint64_t last_timer = timerConfig.size() - 1;
        return (periodFs << 32) | (std::uint64_t{kVendorId} << 16) | kCounter64Bit |
               (last_timer << 8) | 0x01;  // revision 1
    }

    std::uint64_t register64(std::uint64_t offset, std::uint64_t now_ps) const
    {
        if (offset == kCapabilities)
            return capabilities();
        if (offset == kConfig)
            return config;
        if (offset == kInterruptStatus)
            return 0;
        if (offset == kMainCounter)
            return counter(now_ps);
        if (const auto timer = timerIndex(offset)) {
            const std::uint64_t field = (offset - kTimerBase) % kTimerStride;
            if (field == 0)
                return timerConfig[*timer];
            if (field == 8)
                return timerComparator[*timer];
        }
        return 0;
    }

    void setRegister64(std::uint64_t offset, std::uint64_t value, std::uint64_t now_ps)
    {
        if (offset == kConfig) {
            const std::uint64_t running = counter(now_ps);
            config = value & kConfigEnable;  // legacy replacement is not offered
            counterBase = running;
            enabledAtPs = now_ps;
        } else if (offset == kMainCounter) {
            // Software writes the counter while it is halted (Linux: stop, reset, start);
            // a write while running restarts the count from the value written.
            counterBase = value;
            enabledAtPs = now_ps;
        } else if (const auto timer = timerIndex(offset)) {
            const std::uint64_t field = (offset - kTimerBase) % kTimerStride;
            if (field == 0)
                timerConfig[*timer] = kTimer64BitCap | (value & kTimerWritable);
            else if (field == 8)
                timerComparator[*timer] = value;
        }
    }

    std::optional<std::size_t> timerIndex(std::uint64_t offset) const
    {
        if (offset < kTimerBase)
            return std::nullopt;
        const std::uint64_t index = (offset - kTimerBase) / kTimerStride;
        if (index >= timerConfig.size())
            return std::nullopt;
        return static_cast<std::size_t>(index);
    }

    std::uint64_t periodPs;
    std::uint64_t periodFs;
    std::uint64_t config = 0;
    std::uint64_t counterBase = 0;
    std::uint64_t enabledAtPs = 0;
    std::vector<std::uint64_t> timerConfig;
    std::vector<std::uint64_t> timerComparator;
};

} // namespace pimcloud::hpet

#endif // PIMCLOUD_HPET_MODEL_HH
