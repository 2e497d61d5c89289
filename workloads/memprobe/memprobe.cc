// pimcloud-memprobe: load-to-use latency from chosen CPUs to chosen NUMA nodes' memory.
//
// For each --point CPU:NODE[:BYTES] it binds a buffer to NODE (mbind, MPOL_BIND), links
// every cache line of it into one random cycle and checks with move_pages where the
// pages landed. All buffers are set up first; then, with --switch-cpu, it asks gem5 to
// switch to the detailed CPUs (set-up ran fast-forwarded); then for each point it pins
// itself to CPU, warms up, and times a chain of dependent loads. With --m5-stats each
// measured region is bracketed by m5 resetstats/dumpstats, so gem5's k-th stats dump
// holds exactly the k-th point. Prints one JSON object per point.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "chain.hh"

#ifdef PIMCLOUD_HAVE_M5OPS
#include "m5ops.h"
#endif

namespace
{

using pimcloud::memprobe::kLineBytes;

constexpr std::size_t kHugePage = 2 << 20;
constexpr int kMpolBind = 2;            // MPOL_BIND
constexpr unsigned kMpolMfStrict = 1;   // MPOL_MF_STRICT
constexpr std::size_t kPagesChecked = 64;

struct Point
{
    int cpu = -1;
    int node = -1;
    std::size_t bytes = 0;
    int rowLocal = -1;  // -1: as --pattern says
};

struct Options
{
    std::vector<Point> points;
    std::size_t bytes = 32 << 20;  // for points that name no size
    std::uint64_t loads = 200'000;
    std::uint64_t warmupLoads = 20'000;
    std::uint64_t seed = 1;
    bool huge = true;
    bool m5Stats = false;
    bool switchCpu = false;
    bool rowLocal = false;        // --pattern row-local
    std::size_t rowBytes = 2048;  // gem5's HBM_1000_4H_1x128 row buffer
};

[[noreturn]] void fail(const std::string &message)
{
    std::fprintf(stderr, "pimcloud-memprobe: %s\n", message.c_str());
    std::exit(2);
}

std::uint64_t number(std::string_view flag, const char *text)
{
    char *end = nullptr;
    errno = 0;
    const unsigned long long value = std::strtoull(text, &end, 0);
    if (errno != 0 || end == text)
        fail(std::string(flag) + " takes a number, not '" + text + "'");
    std::uint64_t scale = 1;
    switch (*end) {
      case 'K': scale = 1ULL << 10; ++end; break;
      case 'M': scale = 1ULL << 20; ++end; break;
      case 'G': scale = 1ULL << 30; ++end; break;
      default: break;
    }
    if (*end != '\0')
        fail(std::string(flag) + " '" + text + "': use digits with an optional K, M or G");
    return value * scale;
}

bool rowLocalPattern(std::string_view pattern)
{
    if (pattern != "random" && pattern != "row-local")
        fail("pattern '" + std::string(pattern) + "': use random or row-local");
    return pattern == "row-local";
}

// CPU:NODE[:BYTES[:PATTERN]].
Point point(const char *text)
{
    const std::string spec = text;
    std::vector<std::string> fields;
    std::size_t from = 0;
    for (std::size_t colon; (colon = spec.find(':', from)) != std::string::npos;
         from = colon + 1)
        fields.push_back(spec.substr(from, colon - from));
    fields.push_back(spec.substr(from));
    if (fields.size() < 2 || fields.size() > 4)
        fail("--point '" + spec + "': write CPU:NODE[:BYTES[:PATTERN]], e.g. 4:1:8M:row-local");
    Point parsed;
    parsed.cpu = static_cast<int>(number("--point CPU", fields[0].c_str()));
    parsed.node = static_cast<int>(number("--point NODE", fields[1].c_str()));
    if (fields.size() > 2)
        parsed.bytes = number("--point BYTES", fields[2].c_str());
    if (fields.size() > 3)
        parsed.rowLocal = rowLocalPattern(fields[3]) ? 1 : 0;
    return parsed;
}

Options parse(int argc, char **argv)
{
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc)
                fail(std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--point")
            options.points.push_back(point(value()));
        else if (arg == "--bytes")
            options.bytes = number(arg, value());
        else if (arg == "--loads")
            options.loads = number(arg, value());
        else if (arg == "--warmup-loads")
            options.warmupLoads = number(arg, value());
        else if (arg == "--seed")
            options.seed = number(arg, value());
        else if (arg == "--no-huge")
            options.huge = false;
        else if (arg == "--m5-stats")
            options.m5Stats = true;
        else if (arg == "--switch-cpu")
            options.switchCpu = true;
        else if (arg == "--pattern")
            options.rowLocal = rowLocalPattern(value());
        else if (arg == "--row-bytes")
            options.rowBytes = number(arg, value());
        else if (arg == "--help" || arg == "-h") {
            std::printf("usage: pimcloud-memprobe --point CPU:NODE[:BYTES[:PATTERN]] "
                        "[--point ...] "
                        "[--bytes 32M] [--loads 200000] [--warmup-loads 20000] [--seed 1] "
                        "[--pattern random|row-local] [--row-bytes 2048] [--no-huge] [--m5-stats] "
                        "[--switch-cpu]\n");
            std::exit(0);
        } else
            fail("unknown argument '" + std::string(arg) + "' (see --help)");
    }
    if (options.rowBytes < kLineBytes || options.rowBytes % kLineBytes != 0)
        fail("--row-bytes must be a multiple of " + std::to_string(kLineBytes));
    if (options.points.empty())
        fail("name at least one --point CPU:NODE (see --help)");
    for (auto &p : options.points) {
        if (p.bytes == 0)
            p.bytes = options.bytes;
        if (p.rowLocal < 0)
            p.rowLocal = options.rowLocal ? 1 : 0;
        if (p.node >= 64)
            fail("node " + std::to_string(p.node) + ": nodes 0..63 are supported");
        if (p.bytes < 64 * kLineBytes || p.bytes / kLineBytes > UINT32_MAX)
            fail("a buffer must hold between 64 cache lines and 2^32 of them, not " +
                 std::to_string(p.bytes) + " bytes");
    }
    if (options.loads == 0)
        fail("--loads must be at least 1");
    return options;
}

void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        fail("cannot run on CPU " + std::to_string(cpu) + ": " + std::strerror(errno) +
             " (is it online and in this cpuset?)");
}

std::byte *bindBuffer(const Point &point, bool huge)
{
    const std::size_t mapped = point.bytes + (huge ? kHugePage : 0);
    void *raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (raw == MAP_FAILED)
        fail("cannot map " + std::to_string(mapped) + " bytes: " + std::strerror(errno));
    auto address = reinterpret_cast<std::uintptr_t>(raw);
    if (huge) {
        address = (address + kHugePage - 1) & ~(kHugePage - 1);
        // Huge pages keep TLB misses out of the latency; without THP this just fails.
        (void)madvise(reinterpret_cast<void *>(address), point.bytes, MADV_HUGEPAGE);
    }
    unsigned long mask = 1UL << point.node;
    if (syscall(SYS_mbind, address, point.bytes, kMpolBind, &mask, sizeof(mask) * 8 + 1,
                kMpolMfStrict) != 0)
        fail("cannot bind memory to node " + std::to_string(point.node) + ": " +
             std::strerror(errno) + " (does the node exist and have memory?)");
    return reinterpret_cast<std::byte *>(address);
}

// Pages of a sample that move_pages reports on `node`, out of those it reports at all.
std::pair<std::size_t, std::size_t> pagesOnNode(std::byte *buffer, std::size_t bytes, int node)
{
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t pages = bytes / page;
    const std::size_t count = std::min(pages, kPagesChecked);
    std::vector<void *> addresses(count);
    std::vector<int> status(count, -1);
    for (std::size_t i = 0; i < count; ++i)
        addresses[i] = buffer + (i * pages / count) * page;
    if (syscall(SYS_move_pages, 0, count, addresses.data(), nullptr, status.data(), 0) != 0)
        fail(std::string("move_pages cannot report page nodes: ") + std::strerror(errno));
    std::size_t on = 0;
    std::size_t known = 0;
    for (const int where : status) {
        known += where >= 0;
        on += where == node;
    }
    return {on, known};
}

std::uint64_t nowNs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t anonHugeKib()
{
    FILE *smaps = std::fopen("/proc/self/smaps_rollup", "r");
    if (smaps == nullptr)
        return 0;
    char line[256];
    std::uint64_t kib = 0;
    while (std::fgets(line, sizeof(line), smaps) != nullptr) {
        unsigned long long value = 0;
        if (std::sscanf(line, "AnonHugePages: %llu kB", &value) == 1)
            kib = value;
    }
    std::fclose(smaps);
    return kib;
}

struct Prepared
{
    Point point;
    void **start;
    std::size_t pagesOnNode;
    std::size_t pagesChecked;
};

Prepared prepare(const Point &point, const Options &options)
{
    pin(point.cpu);  // fails early, before any work, on a CPU we may not use
    std::byte *buffer = bindBuffer(point, options.huge);
    const std::size_t lines = point.bytes / kLineBytes;
    void **start = pimcloud::memprobe::linkChain(
        buffer, point.rowLocal == 1 ? pimcloud::memprobe::rowLocalCycle(
                                       lines, options.rowBytes / kLineBytes, options.seed)
                                 : pimcloud::memprobe::randomCycle(lines, options.seed));
    const auto [on_node, known] = pagesOnNode(buffer, point.bytes, point.node);
    return {point, start, on_node, known};
}

void measure(const Prepared &prepared, const Options &options)
{
    pin(prepared.point.cpu);
    void **p = pimcloud::memprobe::chase(prepared.start, options.warmupLoads);
#ifdef PIMCLOUD_HAVE_M5OPS
    if (options.m5Stats)
        m5_reset_stats(0, 0);
#endif
    const std::uint64_t begin = nowNs();
    p = pimcloud::memprobe::chase(p, options.loads);
    const std::uint64_t end = nowNs();
#ifdef PIMCLOUD_HAVE_M5OPS
    if (options.m5Stats)
        m5_dump_stats(0, 0);
#endif
    // getcpu(2) itself, and glibc's sched_getcpu() beside it: that reads the thread's rseq
    // area, or without rseq the vDSO (`lsl`, which gem5 leaves unimplemented).
    unsigned cpu_now = 0;
    const int cpu_after =
        syscall(SYS_getcpu, &cpu_now, nullptr, nullptr) == 0 ? static_cast<int>(cpu_now) : -1;
    const int glibc_cpu = sched_getcpu();
    std::printf("{\"cpu\": %d, \"node\": %d, \"bytes\": %zu, \"loads\": %llu, "
                "\"elapsed_ns\": %llu, \"ns_per_load\": %.3f, \"pages_on_node\": %zu, "
                "\"pages_checked\": %zu, \"anon_huge_kib\": %llu, \"cpu_after\": %d, "
                "\"sched_getcpu\": %d, "
                "\"m5_stats\": %s, \"pattern\": \"%s\", \"end\": \"%p\"}\n",
                prepared.point.cpu, prepared.point.node, prepared.point.bytes,
                static_cast<unsigned long long>(options.loads),
                static_cast<unsigned long long>(end - begin),
                static_cast<double>(end - begin) / static_cast<double>(options.loads),
                prepared.pagesOnNode, prepared.pagesChecked,
                static_cast<unsigned long long>(anonHugeKib()), cpu_after, glibc_cpu,
                options.m5Stats ? "true" : "false",
                prepared.point.rowLocal == 1 ? "row-local" : "random",
                static_cast<void *>(p));
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv)
{
    const Options options = parse(argc, argv);
    std::vector<Prepared> prepared;
    for (const auto &point : options.points)
        prepared.push_back(prepare(point, options));
#ifdef PIMCLOUD_HAVE_M5OPS
    if (options.switchCpu)
        m5_switch_cpu(0, 0);
#endif
    for (const auto &each : prepared)
        measure(each, options);
    return 0;
}
