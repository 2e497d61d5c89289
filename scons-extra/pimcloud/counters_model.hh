// The PimCounters device free of gem5: page-access counters per stack, per-CPU miss
// counters, a per-CPU bandwidth throttle, and the register file of pim_counters_abi.h.
//
// Why it exists: the paper's manager reads page hotness from hardware (an access count
// per page and a call returning the n hottest pages of stack k with their type), seed
// 003 estimates memory latency from per-core outstanding-miss counters, and seed 001
// throttles best-effort bandwidth like Intel MBA. gem5's x86 guest has none of these.
// The SimObject (pim_counters.cc) only feeds this model the requests the link router
// sees and moves register accesses in and out.
//
// Memory: 8 bytes per 4 KiB frame of every stack (2 MiB per GiB), allocated up front.
// Time is given by the caller in ticks (picoseconds). C++17: gem5 compiles it.
#ifndef PIMCLOUD_COUNTERS_MODEL_HH
#define PIMCLOUD_COUNTERS_MODEL_HH

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "pimcloud/pim_counters_abi.h"

namespace pimcloud::counters
{

using Tick = std::uint64_t;
inline constexpr unsigned kFrameShift = 12;
inline constexpr std::uint16_t kNoCpu = PIMC_NO_CPU;

// A contiguous run of physical frames: [first, first + count).
struct FrameRange
{
    std::uint64_t first = 0;
    std::uint64_t count = 0;
};

// One answer of a hottest-frames query.
struct HotFrame
{
    std::uint64_t frame = 0;  // physical frame number
    std::uint32_t count = 0;  // decayed access count
    std::uint16_t firstCpu = kNoCpu;
    std::uint8_t flags = 0;   // PIMC_FRAME_*

    bool operator==(const HotFrame &o) const
    {
        return frame == o.frame && count == o.count && firstCpu == o.firstCpu &&
               flags == o.flags;
    }
};

// Access counters of every frame of one stack (which may span several ranges: a stack
// cut by the x86 PCI hole has two). Counts halve once per epoch; the halving is applied
// lazily when a frame is touched or scanned, so an epoch costs nothing.
class StackCounters
{
  public:
    explicit StackCounters(std::vector<FrameRange> ranges) : ranges(std::move(ranges))
    {
        std::uint64_t total = 0;
        for (const FrameRange &r : this->ranges) {
            if (r.count == 0)
                throw std::invalid_argument("a stack range of zero frames");
            total += r.count;
        }
        entries.resize(total);
    }

    std::uint64_t frames() const { return entries.size(); }
    static constexpr std::size_t bytesPerFrame() { return sizeof(Entry); }

    // Slot of a physical frame, or nothing when the frame is not on this stack.
    std::optional<std::uint64_t> slot(std::uint64_t frame) const
    {
        std::uint64_t base = 0;
        for (const FrameRange &r : ranges) {
            if (frame >= r.first && frame - r.first < r.count)
                return base + (frame - r.first);
            base += r.count;
        }
        return std::nullopt;
    }

    // One request reached the frame: `cpu` is the requesting CPU (kNoCpu for a cache's
    // own writeback), `writes` whether it writes or asks for a writable copy.
    void record(std::uint64_t slot, std::uint16_t cpu, bool writes, std::uint32_t epoch)
    {
        Entry &e = entries.at(slot);
        e.count = decayed(e, epoch);
        e.epoch = static_cast<std::uint8_t>(epoch);
        if (e.count != std::numeric_limits<std::uint32_t>::max())
            ++e.count;
        if (writes)
            e.flags |= PIMC_FRAME_WRITTEN;
        if (cpu != kNoCpu) {
            if (e.firstCpu == kNoCpu)
                e.firstCpu = cpu;
            else if (e.firstCpu != cpu)
                e.flags |= PIMC_FRAME_SHARED;
        }
    }

    // The n frames with the highest decayed counts (zero counts never), hottest first,
    // equal counts in frame order.
    std::vector<HotFrame> hottest(std::size_t n, std::uint32_t epoch) const
    {
        std::vector<HotFrame> all;
        std::uint64_t s = 0;
        for (const FrameRange &r : ranges) {
            for (std::uint64_t i = 0; i < r.count; ++i, ++s) {
                const Entry &e = entries[s];
                const std::uint32_t c = decayed(e, epoch);
                if (c != 0)
                    all.push_back({r.first + i, c, e.firstCpu, e.flags});
            }
        }
        const auto hotter = [](const HotFrame &a, const HotFrame &b) {
            return a.count != b.count ? a.count > b.count : a.frame < b.frame;
        };
        const std::size_t keep = std::min(n, all.size());
        std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(keep),
                          all.end(), hotter);
        all.resize(keep);
        return all;
    }

    void reset() { std::fill(entries.begin(), entries.end(), Entry{}); }

    // Raw state for checkpoints: one 64-bit word per frame.
    std::vector<std::uint64_t> save() const
    {
        std::vector<std::uint64_t> words(entries.size());
        for (std::size_t i = 0; i < entries.size(); ++i) {
            const Entry &e = entries[i];
            words[i] = std::uint64_t(e.count) | std::uint64_t(e.firstCpu) << 32 |
                       std::uint64_t(e.flags) << 48 | std::uint64_t(e.epoch) << 56;
        }
        return words;
    }

    void restore(const std::vector<std::uint64_t> &words)
    {
        if (words.size() != entries.size())
            throw std::invalid_argument("saved page counters have " +
                                        std::to_string(words.size()) + " frames, the stack " +
                                        std::to_string(entries.size()));
        for (std::size_t i = 0; i < words.size(); ++i) {
            const std::uint64_t w = words[i];
            entries[i] = {std::uint32_t(w), std::uint16_t(w >> 32), std::uint8_t(w >> 48),
                          std::uint8_t(w >> 56)};
        }
    }

  private:
    struct Entry
    {
        std::uint32_t count = 0;
        std::uint16_t firstCpu = kNoCpu;
        std::uint8_t flags = 0;
        std::uint8_t epoch = 0;  // low 8 bits of the epoch of the last update
    };
    static_assert(sizeof(Entry) == 8, "the stated memory bound is 8 bytes per frame");

    // The count after the halvings of the epochs since the entry's last update. Only
    // the low 8 bits of the epoch are kept: after 32 halvings any count is zero, so an
    // entry older than that is read as zero when the wrapped age is 32 or more; an
    // entry 256k + j epochs old (j < 32) is read as j epochs old, bounded error.
    static std::uint32_t decayed(const Entry &e, std::uint32_t epoch)
    {
        const std::uint32_t age = (epoch - e.epoch) & 0xFFU;
        return age >= 32 ? 0 : e.count >> age;
    }

    std::vector<FrameRange> ranges;
    std::vector<Entry> entries;
};

// Per-CPU counters of seed 003: requests that reached memory and the cycles they stayed
// outstanding there (sum over requests of their latency = sum over cycles of the number
// outstanding). Ticks are converted to each CPU's cycles when read.
class MissCounters
{
  public:
    explicit MissCounters(std::vector<Tick> clock_periods) : periods(std::move(clock_periods))
    {
        for (Tick p : periods)
            if (p == 0)
                throw std::invalid_argument("a CPU clock period of 0 ticks");
        misses.assign(periods.size(), 0);
        outstandingTicks.assign(periods.size(), 0);
    }

    std::size_t cpus() const { return periods.size(); }
    void record(std::size_t cpu, Tick outstanding)
    {
        ++misses.at(cpu);
        outstandingTicks.at(cpu) += outstanding;
    }
    std::uint64_t missCount(std::size_t cpu) const { return misses.at(cpu); }
    std::uint64_t outstandingCycles(std::size_t cpu) const
    {
        return outstandingTicks.at(cpu) / periods.at(cpu);
    }
    std::uint64_t cycles(std::size_t cpu, Tick now) const { return now / periods.at(cpu); }
    Tick period(std::size_t cpu) const { return periods.at(cpu); }

    std::vector<std::uint64_t> save() const
    {
        std::vector<std::uint64_t> words(misses);
        words.insert(words.end(), outstandingTicks.begin(), outstandingTicks.end());
        return words;
    }
    void restore(const std::vector<std::uint64_t> &words)
    {
        if (words.size() != 2 * periods.size())
            throw std::invalid_argument("saved miss counters are for another CPU count");
        misses.assign(words.begin(), words.begin() + std::ptrdiff_t(periods.size()));
        outstandingTicks.assign(words.begin() + std::ptrdiff_t(periods.size()), words.end());
    }

  private:
    std::vector<Tick> periods;
    std::vector<std::uint64_t> misses;
    std::vector<Tick> outstandingTicks;
};

// Per-CPU memory-bandwidth throttle: at level l a CPU's requests leave at least
// l * step apart, so its bandwidth is at most line / (l * step). Like Intel MBA it
// delays requests rather than dropping them, and level 0 costs nothing.
class BandwidthThrottle
{
  public:
    BandwidthThrottle(std::size_t cpus, unsigned levels, Tick step)
        : numLevels(levels), stepTicks(step), level(cpus, 0), nextFree(cpus, 0)
    {
        if (levels < 2)
            throw std::invalid_argument("a throttle needs at least two levels (0 = off)");
        if (step == 0)
            throw std::invalid_argument("a throttle step of 0 ticks throttles nothing");
    }

    unsigned levels() const { return numLevels; }
    Tick step() const { return stepTicks; }
    unsigned levelOf(std::size_t cpu) const { return level.at(cpu); }

    // False (and nothing changes) when the level does not exist.
    bool setLevel(std::size_t cpu, std::uint64_t l)
    {
        if (l >= numLevels)
            return false;
        level.at(cpu) = static_cast<unsigned>(l);
        return true;
    }

    // When a request of `cpu` arriving at `now` may go on.
    Tick admit(std::size_t cpu, Tick now)
    {
        const unsigned l = level.at(cpu);
        if (l == 0)
            return now;
        const Tick leave = std::max(now, nextFree[cpu]);
        nextFree[cpu] = leave + Tick(l) * stepTicks;
        return leave;
    }

    // The level's bandwidth ceiling in bytes per second for `line`-byte requests
    // (1 ps ticks); infinity at level 0.
    double ceilingBytesPerSecond(unsigned l, unsigned line) const
    {
        if (l == 0)
            return std::numeric_limits<double>::infinity();
        return double(line) * 1e12 / (double(l) * double(stepTicks));
    }

    std::vector<std::uint64_t> save() const
    {
        std::vector<std::uint64_t> words(level.begin(), level.end());
        words.insert(words.end(), nextFree.begin(), nextFree.end());
        return words;
    }
    void restore(const std::vector<std::uint64_t> &words)
    {
        if (words.size() != 2 * level.size())
            throw std::invalid_argument("a saved throttle is for another CPU count");
        for (std::size_t i = 0; i < level.size(); ++i) {
            level[i] = static_cast<unsigned>(std::min<std::uint64_t>(words[i], numLevels - 1));
            nextFree[i] = words[level.size() + i];
        }
    }

  private:
    unsigned numLevels;
    Tick stepTicks;
    std::vector<unsigned> level;
    std::vector<Tick> nextFree;
};

// Static description of a device: its stacks and CPUs.
struct DeviceConfig
{
    std::vector<std::vector<FrameRange>> stacks;  // each stack's frame ranges
    std::vector<std::uint64_t> stackNodes;        // each stack's NUMA node
    std::vector<Tick> cpuPeriods;                 // each CPU's clock period
    Tick decayPeriod = 100'000'000'000;           // 100 ms: the paper's interval
    Tick scanPerFrame = 1'000;                    // 1 ns per frame scanned
    std::uint64_t maxQuery = 4096;
    unsigned throttleLevels = 10;
    Tick throttleStep = 2'000;                    // 2 ns per level
};

// Why a configuration is unusable, or nothing.
inline std::optional<std::string> checkConfig(const DeviceConfig &c)
{
    if (c.stacks.empty())
        return std::string("no stack to count: give at least one stack range");
    if (c.stacks.size() > PIMC_STACK_MAX_STACKS)
        return "stacks: " + std::to_string(c.stacks.size()) + " is more than " +
               std::to_string(PIMC_STACK_MAX_STACKS) + " the register map holds";
    if (c.stackNodes.size() != c.stacks.size())
        return "stack_nodes has " + std::to_string(c.stackNodes.size()) +
               " entries for " + std::to_string(c.stacks.size()) + " stacks";
    if (c.cpuPeriods.size() > PIMC_CPU_MAX_CPUS)
        return "CPUs: " + std::to_string(c.cpuPeriods.size()) + " is more than " +
               std::to_string(PIMC_CPU_MAX_CPUS) + " the register map holds";
    if (c.maxQuery == 0 || c.maxQuery > 65536)
        return "max_query " + std::to_string(c.maxQuery) + " is outside 1..65536";
    return std::nullopt;
}

// The register block's length for a configuration.
// The register block's size: the result window holds maxQuery entries.
inline std::uint64_t blockSize(std::uint64_t maxQuery)
{
    return PIMC_RESULT_BASE + maxQuery * PIMC_RESULT_STRIDE;
}

// The whole device: counters, throttle and the register file of pim_counters_abi.h.
class Device
{
  public:
    explicit Device(const DeviceConfig &c)
        : config(checked(c)), misses(c.cpuPeriods),
          throttle(c.cpuPeriods.size(), c.throttleLevels, c.throttleStep),
          decayPeriod(c.decayPeriod)
    {
        for (const auto &ranges : c.stacks)
            stacks.emplace_back(ranges);
    }

    std::size_t numStacks() const { return stacks.size(); }
    std::size_t numCpus() const { return misses.cpus(); }
    const StackCounters &stack(std::size_t i) const { return stacks.at(i); }
    MissCounters &missCounters() { return misses; }
    const MissCounters &missCounters() const { return misses; }
    BandwidthThrottle &bandwidthThrottle() { return throttle; }
    const BandwidthThrottle &bandwidthThrottle() const { return throttle; }

    std::uint32_t epoch(Tick now) const
    {
        return decayPeriod == 0 ? 0 : std::uint32_t(now / decayPeriod);
    }

    // A request reached memory at `addr`; `cpu` is the requesting CPU or kNoCpu.
    // Returns whether the address is on a counted stack.
    bool recordAccess(std::uint64_t addr, std::uint16_t cpu, bool writes, Tick now)
    {
        const std::uint64_t frame = addr >> kFrameShift;
        for (StackCounters &s : stacks) {
            if (auto slot = s.slot(frame)) {
                s.record(*slot, cpu, writes, epoch(now));
                return true;
            }
        }
        return false;
    }

    // Register reads and writes (8-byte, aligned: the caller checks).
    std::uint64_t read(std::uint64_t offset, Tick now) const
    {
        switch (offset) {
          case PIMC_MAGIC: return PIMCLOUD_COUNTERS_MAGIC;
          case PIMC_NUM_STACKS: return stacks.size();
          case PIMC_NUM_CPUS: return misses.cpus();
          case PIMC_MAX_QUERY: return config.maxQuery;
          case PIMC_FRAME_SHIFT: return kFrameShift;
          case PIMC_DECAY_PERIOD_PS: return decayPeriod;
          case PIMC_THROTTLE_LEVELS: return throttle.levels();
          case PIMC_THROTTLE_STEP_PS: return throttle.step();
          case PIMC_QUERY_N: return queryN;
          case PIMC_QUERY_STACK: return queryStack;
          case PIMC_QUERY_CMD: return 0;
          case PIMC_QUERY_STATUS: return status(now);
          case PIMC_QUERY_RESULTS:
            return status(now) == PIMC_STATUS_DONE ? results.size() : 0;
          case PIMC_NOW_PS: return now;
          case PIMC_QUERY_READY_PS: return readyAt;
          default: break;
        }
        if (offset >= PIMC_RESULT_BASE) {
            const std::uint64_t i = (offset - PIMC_RESULT_BASE) / PIMC_RESULT_STRIDE;
            if (status(now) != PIMC_STATUS_DONE || i >= results.size())
                return 0;
            const HotFrame &h = results[i];
            if ((offset - PIMC_RESULT_BASE) % PIMC_RESULT_STRIDE == 0)
                return h.frame;
            return std::uint64_t(h.count) | std::uint64_t(h.firstCpu) << 32 |
                   std::uint64_t(h.flags) << 48;
        }
        if (offset >= PIMC_CPU_BASE) {
            const std::uint64_t cpu = (offset - PIMC_CPU_BASE) / PIMC_CPU_STRIDE;
            if (cpu >= misses.cpus())
                return 0;
            switch ((offset - PIMC_CPU_BASE) % PIMC_CPU_STRIDE) {
              case PIMC_CPU_MISSES: return misses.missCount(cpu);
              case PIMC_CPU_OUTSTANDING: return misses.outstandingCycles(cpu);
              case PIMC_CPU_CYCLES: return misses.cycles(cpu, now);
              case PIMC_CPU_THROTTLE: return throttle.levelOf(cpu);
              default: return 0;
            }
        }
        if (offset >= PIMC_STACK_BASE) {
            const std::uint64_t s = (offset - PIMC_STACK_BASE) / PIMC_STACK_STRIDE;
            if (s >= stacks.size())
                return 0;
            switch ((offset - PIMC_STACK_BASE) % PIMC_STACK_STRIDE) {
              case PIMC_STACK_FRAMES: return stacks[s].frames();
              case PIMC_STACK_NODE: return config.stackNodes[s];
              default: return 0;
            }
        }
        return 0;
    }

    void write(std::uint64_t offset, std::uint64_t value, Tick now)
    {
        switch (offset) {
          case PIMC_DECAY_PERIOD_PS: decayPeriod = value; return;
          case PIMC_QUERY_N: queryN = value; return;
          case PIMC_QUERY_STACK: queryStack = value; return;
          case PIMC_QUERY_CMD: command(value, now); return;
          default: break;
        }
        if (offset >= PIMC_CPU_BASE && offset < PIMC_RESULT_BASE &&
            (offset - PIMC_CPU_BASE) % PIMC_CPU_STRIDE == PIMC_CPU_THROTTLE) {
            const std::uint64_t cpu = (offset - PIMC_CPU_BASE) / PIMC_CPU_STRIDE;
            if (cpu < misses.cpus())
                throttle.setLevel(cpu, value);
        }
        // Writes to read-only registers are ignored, as hardware would.
    }

    // State a checkpoint must keep besides the counters themselves.
    struct Saved
    {
        std::uint64_t decayPeriod, queryN, queryStack, started, failed, readyAt;
        std::vector<std::uint64_t> results;  // frame, packed word, ...
    };
    Saved saveRegisters() const
    {
        Saved s{decayPeriod, queryN, queryStack, started ? 1U : 0U, failed ? 1U : 0U,
                readyAt, {}};
        for (const HotFrame &h : results) {
            s.results.push_back(h.frame);
            s.results.push_back(std::uint64_t(h.count) | std::uint64_t(h.firstCpu) << 32 |
                                std::uint64_t(h.flags) << 48);
        }
        return s;
    }
    void restoreRegisters(const Saved &s)
    {
        decayPeriod = s.decayPeriod;
        queryN = s.queryN;
        queryStack = s.queryStack;
        started = s.started != 0;
        failed = s.failed != 0;
        readyAt = s.readyAt;
        results.clear();
        for (std::size_t i = 0; i + 1 < s.results.size(); i += 2) {
            const std::uint64_t w = s.results[i + 1];
            results.push_back({s.results[i], std::uint32_t(w), std::uint16_t(w >> 32),
                               std::uint8_t(w >> 48)});
        }
    }
    StackCounters &mutableStack(std::size_t i) { return stacks.at(i); }

  private:
    static const DeviceConfig &checked(const DeviceConfig &c)
    {
        if (auto error = checkConfig(c))
            throw std::invalid_argument(*error);
        return c;
    }

    std::uint64_t status(Tick now) const
    {
        if (failed)
            return PIMC_STATUS_ERROR;
        if (!started)
            return PIMC_STATUS_IDLE;
        return now < readyAt ? PIMC_STATUS_BUSY : PIMC_STATUS_DONE;
    }

    void command(std::uint64_t cmd, Tick now)
    {
        started = true;
        failed = queryStack >= stacks.size() ||
                 (cmd == PIMC_CMD_HOTTEST && (queryN == 0 || queryN > config.maxQuery)) ||
                 (cmd != PIMC_CMD_HOTTEST && cmd != PIMC_CMD_RESET);
        results.clear();
        readyAt = now;
        if (failed)
            return;
        StackCounters &s = stacks[queryStack];
        if (cmd == PIMC_CMD_RESET) {
            s.reset();
            return;
        }
        // The answer is computed at once but is only visible after the scan the
        // hardware would make over the stack's counters.
        results = s.hottest(queryN, epoch(now));
        readyAt = now + s.frames() * config.scanPerFrame;
    }

    DeviceConfig config;
    std::vector<StackCounters> stacks;
    MissCounters misses;
    BandwidthThrottle throttle;
    std::uint64_t decayPeriod;
    std::uint64_t queryN = 0;
    std::uint64_t queryStack = 0;
    bool started = false;
    bool failed = false;
    Tick readyAt = 0;
    std::vector<HotFrame> results;
};

} // namespace pimcloud::counters

#endif // PIMCLOUD_COUNTERS_MODEL_HH
