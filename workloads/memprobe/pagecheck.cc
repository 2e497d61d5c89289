// pimcloud-pagecheck: does page migration keep every write? One thread on --writer-cpu
// writes and verifies a pattern over a buffer (pagecheck.hh) round after round, while
// another on --mover-cpu moves the buffer's pages back and forth between two NUMA nodes
// with move_pages(2), the call the agent's policies use. A move of pages the writer is
// using needs a TLB shootdown on the writer's core: a simulator that misses one shows up
// as lost writes. With --atomic-cpus it first checks that locked read-modify-writes are
// atomic across those cores: each thread adds to one counter with `lock xadd` and to
// another under a compare-and-swap spinlock (the kernel's locks are made of these), and
// both must end at threads x increments (and xadd hand out every value once). Prints one
// JSON object; exits 1 on any mismatch, a failed move or fewer moves than --moves.
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
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "pimcloud-pagecheck: %s\n"
               "usage: pimcloud-pagecheck [--mib N] [--rounds R] [--writer-cpu C] "
               "[--mover-cpu C] [--nodes A,B] [--moves M] [--atomic-cpus C,C... --increments K]\n",
               why);
  std::exit(2);
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
    else if (flag == "--atomic-cpus") {
      for (const char* p = value; *p != '\0';) {
        char* end = nullptr;
        o.atomicCpus.push_back(static_cast<int>(std::strtol(p, &end, 10)));
        if (end == p) usage("--atomic-cpus takes CPUs separated by commas, e.g. 0,2,4");
        p = *end == ',' ? end + 1 : end;
      }
    }
    else if (flag == "--writer-cpu") o.writerCpu = std::atoi(value);
    else if (flag == "--mover-cpu") o.moverCpu = std::atoi(value);
    else if (flag == "--nodes") {
      if (std::sscanf(value, "%d,%d", &o.nodeA, &o.nodeB) != 2) usage("--nodes takes A,B");
    } else {
      usage(("unknown option " + flag).c_str());
    }
  }
  if (o.mib == 0 || o.rounds < 2) usage("--mib must be at least 1 and --rounds at least 2");
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

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  Atomics atomics;
  if (!o.atomicCpus.empty()) atomics = checkAtomics(o.atomicCpus, o.increments);
  const std::uint64_t wanted = o.atomicCpus.size() * o.increments;
  const bool atomicsRight =
      atomics.xadd == wanted && atomics.xaddUnique && atomics.locked == wanted;
  const std::size_t bytes = o.mib << 20;
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
              "\"first_expected\": %llu, \"atomic_threads\": %zu, \"increments\": %llu, "
              "\"xadd_count\": %llu, \"xadd_unique\": %s, \"locked_count\": %llu, "
              "\"atomics_pinned\": %s, "
              "\"atomics_right\": %s}\n",
              bytes, lines, static_cast<unsigned long long>(rounds),
              static_cast<unsigned long long>(moves.load()),
              static_cast<unsigned long long>(pagesMoved.load()),
              static_cast<unsigned long long>(moveErrors.load()), pinned ? "true" : "false",
              static_cast<unsigned long long>(total.mismatches),
              static_cast<unsigned long long>(total.firstLine),
              static_cast<unsigned long long>(total.firstFound),
              static_cast<unsigned long long>(total.firstExpected), o.atomicCpus.size(),
              static_cast<unsigned long long>(o.increments),
              static_cast<unsigned long long>(atomics.xadd), atomics.xaddUnique ? "true" : "false",
              static_cast<unsigned long long>(atomics.locked), atomics.pinned ? "true" : "false",
              atomicsRight ? "true" : "false");
  return total.mismatches == 0 && atomicsRight && movedEnough ? 0 : 1;
}
