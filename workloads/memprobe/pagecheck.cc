// pimcloud-pagecheck: does page migration keep every write? One thread on --writer-cpu
// writes and verifies a pattern over a buffer (pagecheck.hh) round after round, while
// another on --mover-cpu moves the buffer's pages back and forth between two NUMA nodes
// with move_pages(2), the call the agent's policies use. A move of pages the writer is
// using needs a TLB shootdown on the writer's core: a simulator that misses one shows up
// as lost writes. With --atomic-cpus it first checks that locked read-modify-writes are
// atomic across those cores: each thread adds to one counter with `lock xadd` and to
// another under a compare-and-swap spinlock (the kernel's locks are made of these), and
// both must end at threads x increments (and xadd hand out every value once). With
// --handoff-cpus A,B it also hands lines between two cores through memory: each round one
// core checks the other's last round, writes its own, flushes every line (clflush: the
// data leaves as writebacks on the writer's route to --handoff-node) and passes the turn;
// the other reads them back from memory, last line first. A memory system that lets the
// reader's request overtake the writer's writeback of the same line (a fast local route
// past a slow remote one) can show up as stale lines, when the reader gets there within
// the writer's link time (the writeback's head start); --congest-cpus adds streaming threads
// to that node to load the writer's route. Prints one JSON object; exits 1 on any
// mismatch, a failed move or fewer moves than --moves.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "pagecheck.hh"

namespace {

constexpr int kMpolMfMove = 1 << 1;

struct Options {
  std::size_t mib = 2;
  std::uint64_t rounds = 200;
  std::uint64_t moves = 4;  // the writer goes on until the mover has made this many
  int writerCpu = 1;
  int moverCpu = 0;
  int nodeA = 0;
  int nodeB = 1;
  std::vector<int> atomicCpus;  // empty: no atomics check
  std::uint64_t increments = 20000;
  std::vector<int> handoffCpus;  // empty: no hand-over check; else exactly two
  int handoffNode = -1;          // -1: wherever the kernel puts the lines
  std::uint64_t handoffRounds = 2000;
  std::size_t handoffLines = 64;
  std::vector<int> congestCpus;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "pimcloud-pagecheck: %s\n"
               "usage: pimcloud-pagecheck [--mib N] [--rounds R] [--writer-cpu C] "
               "[--mover-cpu C] [--nodes A,B] [--moves M] [--atomic-cpus C,C... --increments K] "
               "[--handoff-cpus A,B [--handoff-node N] [--handoff-rounds R] [--handoff-lines L] "
               "[--congest-cpus C,C...]]\n",
               why);
  std::exit(2);
}

std::vector<int> cpuList(const std::string& flag, const char* value) {
  std::vector<int> cpus;
  for (const char* p = value; *p != '\0';) {
    char* end = nullptr;
    cpus.push_back(static_cast<int>(std::strtol(p, &end, 10)));
    if (end == p) usage((flag + " takes CPUs separated by commas, e.g. 0,2,4").c_str());
    p = *end == ',' ? end + 1 : end;
  }
  return cpus;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing the value of " + flag).c_str());
    const char* value = argv[++i];
    if (flag == "--mib") o.mib = std::strtoul(value, nullptr, 10);
    else if (flag == "--rounds") o.rounds = std::strtoull(value, nullptr, 10);
    else if (flag == "--moves") o.moves = std::strtoull(value, nullptr, 10);
    else if (flag == "--increments") o.increments = std::strtoull(value, nullptr, 10);
    else if (flag == "--atomic-cpus") o.atomicCpus = cpuList(flag, value);
    else if (flag == "--handoff-cpus") o.handoffCpus = cpuList(flag, value);
    else if (flag == "--congest-cpus") o.congestCpus = cpuList(flag, value);
    else if (flag == "--handoff-node") {
      char* end = nullptr;
      o.handoffNode = static_cast<int>(std::strtol(value, &end, 10));
      if (end == value || *end != '\0' || o.handoffNode < -1)
        usage("--handoff-node takes a NUMA node, or -1 for wherever the kernel puts the lines");
    }
    else if (flag == "--handoff-rounds") o.handoffRounds = std::strtoull(value, nullptr, 10);
    else if (flag == "--handoff-lines") o.handoffLines = std::strtoul(value, nullptr, 10);
    else if (flag == "--writer-cpu") o.writerCpu = std::atoi(value);
    else if (flag == "--mover-cpu") o.moverCpu = std::atoi(value);
    else if (flag == "--nodes") {
      if (std::sscanf(value, "%d,%d", &o.nodeA, &o.nodeB) != 2) usage("--nodes takes A,B");
    } else {
      usage(("unknown option " + flag).c_str());
    }
  }
  if (o.rounds < 2) usage("--rounds must be at least 2");
  if (!o.handoffCpus.empty() && o.handoffCpus.size() != 2)
    usage("--handoff-cpus takes two CPUs, e.g. 0,4 (a host core and a PIM core)");
  if (o.mib == 0 && o.atomicCpus.empty() && o.handoffCpus.empty())
    usage("--mib 0 leaves the migration check out: give --atomic-cpus or --handoff-cpus");
  if (!o.handoffCpus.empty() && (o.handoffRounds < 2 || o.handoffLines == 0))
    usage("--handoff-rounds must be at least 2 and --handoff-lines at least 1");
  return o;
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

struct Atomics {
  std::uint64_t xadd = 0;    // the `lock xadd` counter
  bool xaddUnique = true;    // every value it handed out was handed out once
  std::uint64_t locked = 0;  // the counter under the spinlock
  bool pinned = true;
};

// Every thread on its own CPU, all released at once so their increments overlap.
Atomics checkAtomics(const std::vector<int>& cpus, std::uint64_t increments) {
  std::atomic<std::uint64_t> xadd{0};
  std::atomic<std::uint64_t> handedOut{0};  // the sum of the values xadd returned
  std::atomic<int> lock{0};
  std::atomic<int> ready{0};
  volatile std::uint64_t locked = 0;
  std::atomic<bool> pinned{true};
  std::vector<std::thread> threads;
  for (int cpu : cpus) {
    threads.emplace_back([&, cpu] {
      if (!pin(cpu)) pinned = false;
      ++ready;
      while (ready.load() < static_cast<int>(cpus.size())) {
      }
      std::uint64_t sum = 0;
      for (std::uint64_t i = 0; i < increments; ++i) {
        sum += xadd.fetch_add(1);  // its result used: `lock xadd`, not `lock add`
        int free = 0;
        while (!lock.compare_exchange_weak(free, 1, std::memory_order_acquire)) free = 0;
        locked = locked + 1;
        lock.store(0, std::memory_order_release);
      }
      handedOut += sum;
    });
  }
  for (auto& t : threads) t.join();
  // Atomic, it handed out 0, 1, ..., n-1 once each: their sum is n(n-1)/2.
  const std::uint64_t n = xadd.load();
  return {n, n * (n - 1) / 2 == handedOut.load(), locked, pinned.load()};
}

void flushLine(const volatile void* p) { asm volatile("clflush (%0)" ::"r"(p) : "memory"); }

// `bytes` of anonymous memory, bound to `node` unless it is -1 (MPOL_BIND, every page
// faulted in), or nullptr.
void* mapOn(std::size_t bytes, int node) {
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  if (node >= 0) {
    unsigned long mask[16] = {};
    if (node >= static_cast<int>(sizeof mask * 8)) return nullptr;
    mask[node / 64] = 1UL << (node % 64);
    constexpr unsigned long kMpolBind = 2;
    if (syscall(SYS_mbind, mem, bytes, kMpolBind, mask, sizeof mask * 8, 0UL) != 0) return nullptr;
  }
  std::memset(mem, 0, bytes);
  return mem;
}

struct Handoff {
  bool ran = false;
  bool mapped = true;
  bool pinned = true;
  std::uint64_t rounds = 0;
  std::uint64_t congestBytes = 0;  // what the congesting threads streamed
  pimcloud::pagecheck::Pass total;
};

// Two cores take turns through memory (see the top of the file).
Handoff checkHandoff(const Options& o) {
  Handoff h;
  h.ran = true;
  const std::size_t bytes = o.handoffLines * pimcloud::pagecheck::kLineWords * 8;
  constexpr std::size_t kCongestBytes = 8 << 20;
  void* mem = mapOn(bytes, o.handoffNode);
  std::vector<void*> congest;
  for (std::size_t i = 0; mem != nullptr && i < o.congestCpus.size(); ++i) {
    congest.push_back(mapOn(kCongestBytes, o.handoffNode));
    if (congest.back() == nullptr) congest.pop_back(), mem = (munmap(mem, bytes), nullptr);
  }
  if (mem == nullptr) {
    std::fprintf(stderr, "pimcloud-pagecheck: cannot map the hand-over's memory on node %d: "
                 "%s; give an online node with free memory (--handoff-node, or -1 for any)\n",
                 o.handoffNode, std::strerror(errno));
    for (void* c : congest) munmap(c, kCongestBytes);
    h.mapped = false;
    return h;
  }
  auto* words = static_cast<volatile std::uint64_t*>(mem);
  std::atomic<std::uint64_t> turn{0};
  std::atomic<bool> done{false};
  std::atomic<bool> pinned{true};
  std::atomic<std::uint64_t> streamed{0};
  std::vector<pimcloud::pagecheck::Pass> found(2);
  std::vector<std::thread> streams;
  for (std::size_t i = 0; i < o.congestCpus.size(); ++i) {
    streams.emplace_back([&, i] {
      if (!pin(o.congestCpus[i])) pinned = false;
      auto* line = static_cast<volatile std::uint64_t*>(congest[i]);
      std::uint64_t n = 0;
      while (!done.load(std::memory_order_relaxed)) {
        for (std::size_t w = 0; w < kCongestBytes / 8; w += 8) line[w] = line[w] + 1;
        n += kCongestBytes;
      }
      streamed += n;
    });
  }
  std::vector<std::thread> sides;
  for (int side = 0; side < 2; ++side) {
    sides.emplace_back([&, side] {
      if (!pin(o.handoffCpus[static_cast<std::size_t>(side)])) pinned = false;
      for (std::uint64_t r = static_cast<std::uint64_t>(side); r < o.handoffRounds; r += 2) {
        while (turn.load(std::memory_order_acquire) != r) {
          asm volatile("pause");  // a spinning sibling must not starve the other side
        }
        pimcloud::pagecheck::absorb(found[static_cast<std::size_t>(side)],
            pimcloud::pagecheck::verifyAndWrite(words, o.handoffLines, r, true));
        for (std::size_t line = 0; line < o.handoffLines; ++line)
          flushLine(words + line * pimcloud::pagecheck::kLineWords);
        asm volatile("mfence" ::: "memory");
        turn.store(r + 1, std::memory_order_release);
      }
    });
  }
  for (auto& t : sides) t.join();
  done = true;
  for (auto& t : streams) t.join();
  // The last round, read back by whoever ran main.
  pimcloud::pagecheck::absorb(found[0], found[1]);
  pimcloud::pagecheck::absorb(
      found[0], pimcloud::pagecheck::verifyAndWrite(words, o.handoffLines, o.handoffRounds, true));
  h.total = found[0];
  h.rounds = o.handoffRounds;
  h.pinned = pinned.load();
  h.congestBytes = streamed.load();
  munmap(mem, bytes);
  for (void* c : congest) munmap(c, kCongestBytes);
  return h;
}

// The atomics' and the hand-over's fields, closing the JSON object.
void report(const Options& o, const Atomics& atomics, bool atomicsRight, const Handoff& h) {
  std::printf("\"atomic_threads\": %zu, \"increments\": %llu, "
              "\"xadd_count\": %llu, \"xadd_unique\": %s, \"locked_count\": %llu, "
              "\"atomics_pinned\": %s, \"atomics_right\": %s, "
              "\"handoff_rounds\": %llu, \"handoff_lines\": %zu, "
              "\"handoff_node\": %d, \"handoff_mapped\": %s, \"handoff_pinned\": %s, "
              "\"handoff_mismatches\": %llu, \"handoff_first_line\": %llu, "
              "\"handoff_first_found\": %llu, \"handoff_first_expected\": %llu, "
              "\"congest_threads\": %zu, \"congest_bytes\": %llu}\n",
              o.atomicCpus.size(), static_cast<unsigned long long>(o.increments),
              static_cast<unsigned long long>(atomics.xadd), atomics.xaddUnique ? "true" : "false",
              static_cast<unsigned long long>(atomics.locked), atomics.pinned ? "true" : "false",
              atomicsRight ? "true" : "false",
              static_cast<unsigned long long>(h.rounds), o.handoffLines, o.handoffNode,
              h.mapped ? "true" : "false", h.pinned ? "true" : "false",
              static_cast<unsigned long long>(h.total.mismatches),
              static_cast<unsigned long long>(h.total.firstLine),
              static_cast<unsigned long long>(h.total.firstFound),
              static_cast<unsigned long long>(h.total.firstExpected), o.congestCpus.size(),
              static_cast<unsigned long long>(h.congestBytes));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Atomics atomics;
  if (!o.atomicCpus.empty()) atomics = checkAtomics(o.atomicCpus, o.increments);
  const std::uint64_t wanted = o.atomicCpus.size() * o.increments;
  const bool atomicsRight =
      atomics.xadd == wanted && atomics.xaddUnique && atomics.locked == wanted;
  Handoff handoff;
  if (!o.handoffCpus.empty()) handoff = checkHandoff(o);
  const bool handoffRight =
      !handoff.ran || (handoff.mapped && handoff.pinned && handoff.total.mismatches == 0);
  // --mib 0: no migration check (the other checks alone).
  const std::size_t bytes = o.mib << 20;
  if (bytes == 0) {
    std::printf("{\"bytes\": 0, \"rounds\": 0, \"moves\": 0, \"move_errors\": 0, "
                "\"mismatches\": 0, ");
    report(o, atomics, atomicsRight, handoff);
    return atomicsRight && handoffRight ? 0 : 1;
  }
  const std::size_t pageBytes = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::fprintf(stderr, "pimcloud-pagecheck: mmap of %zu MiB: %s\n", o.mib, std::strerror(errno));
    return 1;
  }
  madvise(mem, bytes, MADV_NOHUGEPAGE);  // 4 KiB pages: every move is a page of its own
  auto* words = static_cast<volatile std::uint64_t*>(mem);
  const std::size_t lines = bytes / (pimcloud::pagecheck::kLineWords * 8);
  const std::size_t pages = bytes / pageBytes;

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> moves{0}, pagesMoved{0}, moveErrors{0};
  pimcloud::pagecheck::Pass total;
  std::uint64_t rounds = 0;
  bool pinned = pin(o.writerCpu);
  pimcloud::pagecheck::verifyAndWrite(words, lines, 0);  // every page faulted in first
  std::thread mover([&] {
    pinned = pin(o.moverCpu) && pinned;
    std::vector<void*> addrs(pages);
    std::vector<int> status(pages), before(pages);
    for (std::size_t p = 0; p < pages; ++p) addrs[p] = static_cast<char*>(mem) + p * pageBytes;
    for (int target = o.nodeB; !done.load(); target = target == o.nodeA ? o.nodeB : o.nodeA) {
      std::vector<int> nodes(pages, target);
      // Where each page is first: a page counts as moved when it left another node.
      const long asked = syscall(SYS_move_pages, 0, pages, addrs.data(), nullptr,
                                 before.data(), 0);
      if (asked < 0 || syscall(SYS_move_pages, 0, pages, addrs.data(), nodes.data(),
                               status.data(), kMpolMfMove) < 0) {
        if (++moveErrors >= 100) break;  // no NUMA here, or no permission: the writer ends
        continue;
      }
      std::uint64_t landed = 0;
      for (std::size_t p = 0; p < pages; ++p) landed += before[p] != target && status[p] == target;
      pagesMoved += landed;
      ++moves;
    }
  });
  for (std::uint64_t r = 1;
       r < o.rounds || (moves.load() < o.moves && moveErrors.load() < 100); ++r) {
    pimcloud::pagecheck::absorb(total, pimcloud::pagecheck::verifyAndWrite(words, lines, r));
    rounds = r + 1;
  }
  done = true;
  mover.join();
  // The last round's writes too, with every move done.
  pimcloud::pagecheck::absorb(total, pimcloud::pagecheck::verifyAndWrite(words, lines, rounds));
  const bool movedEnough = moveErrors.load() == 0 && moves.load() >= o.moves;
  std::printf("{\"bytes\": %zu, \"lines\": %zu, \"rounds\": %llu, \"moves\": %llu, "
              "\"pages_moved\": %llu, \"move_errors\": %llu, \"pinned\": %s, "
              "\"mismatches\": %llu, \"first_line\": %llu, \"first_found\": %llu, "
              "\"first_expected\": %llu, ",
              bytes, lines, static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(moves.load()),
              static_cast<unsigned long long>(pagesMoved.load()),
              static_cast<unsigned long long>(moveErrors.load()), pinned ? "true" : "false",
              static_cast<unsigned long long>(total.mismatches),
              static_cast<unsigned long long>(total.firstLine),
              static_cast<unsigned long long>(total.firstFound),
              static_cast<unsigned long long>(total.firstExpected));
  report(o, atomics, atomicsRight, handoff);
  return total.mismatches == 0 && atomicsRight && handoffRight && movedEnough ? 0 : 1;
}
