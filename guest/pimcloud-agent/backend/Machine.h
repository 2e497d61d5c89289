// What the agent needs from the machine, and nothing more. LinuxMachine does it through
// cgroup v2, sched_setaffinity, move_pages and idle page tracking; FakeMachine does it in
// memory for unit tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pimcloud {

struct Status {
  bool ok = true;
  bool gone = false;  // the process or thread no longer exists
  std::string error;
  static Status success() { return {}; }
  static Status failure(std::string message, bool gone = false) {
    return Status{false, gone, std::move(message)};
  }
};

// One page of a process, with its node and how hot it is (higher = more accesses).
struct PageInfo {
  std::uintptr_t addr = 0;
  int node = -1;
  std::uint32_t hotness = 0;
};

// What the kernel did with a page move, never what was planned: counts from move_pages'
// per-page status (re-queried after an error) or from numa_maps before and after.
struct MoveResult {
  std::uint64_t moved = 0;   // pages now on the target node
  std::uint64_t failed = 0;  // pages left where they were
  std::uint64_t busy = 0;    // of those, pages the kernel could not move now (EBUSY)
  std::uint64_t alreadyThere = 0;  // pages that were on the target node before the call
  std::vector<std::uintptr_t> foundThere;  // which: e.g. taken along by a huge page moved
                                           // for another address of the same plan
  bool targetFull = false;   // ENOMEM: the target node has no free memory
  std::vector<std::uintptr_t> movedPages;  // which pages moved, when the call can tell
  Status status;

  // Why pages stayed, in words that tell ENOMEM, ESRCH and EBUSY apart ("" if none did).
  std::string why(int node) const;
};

// One CPU's miss counters (the board's hardware counters): requests that reached memory,
// the cycles they stayed outstanding there, and the CPU's clock in cycles.
struct MissSample {
  std::uint64_t misses = 0;
  std::uint64_t outstandingCycles = 0;
  std::uint64_t cycles = 0;
};

// A frame of a process as the board's page-access counters see it (Verghese et al.'s
// per-page miss counts, the paper's hot-page call): where it is, how often memory saw it,
// by one CPU or more, read-only or written.
struct AccessedPage {
  std::uintptr_t addr = 0;  // in the process's address space
  int node = -1;            // the memory it is in
  std::uint64_t count = 0;
  bool shared = false;
  bool written = false;
  int cpu = -1;  // the first (for a private page: the only) CPU that touched it
};

// An LC app as the backend knows it.
struct AppHandle {
  std::string name;
  int pid = 0;
};

class Machine {
 public:
  virtual ~Machine() = default;
  // Free bytes per NUMA node (stack k = node k).
  virtual std::map<int, std::uint64_t> freeBytesPerNode() = 0;
  // Restrict an app to these CPUs (cgroup cpuset, or affinity of every thread).
  virtual Status setAppCpus(const AppHandle& app, const std::vector<int>& cpus) = 0;
  // Pin one thread (a remote PIM core's dedicated thread, or the rest of an app).
  virtual Status pinThread(int tid, const std::vector<int>& cpus) = 0;
  // The best-effort jobs' CPUs and CPU quota (cgroup cpu.max; fraction <= 0 = unlimited).
  virtual Status setBeCpus(const std::vector<int>& cpus) = 0;
  virtual Status setBeQuota(double fractionOfCpus) = 0;
  // Pages of a process on `node` (node < 0: all), hottest first.
  virtual std::vector<PageInfo> hotPages(int pid, int node) = 0;
  // The same pages without their hotness (0), in address order: the listing alone, where
  // hotPages with the page-access counters also asks the node's memory (every memory for
  // node < 0) for its hottest frames (a reverse-map walk per frame in the driver: ~8 ms
  // of a host core per memory in gem5).
  virtual std::vector<PageInfo> pagesOn(int pid, int node) = 0;
  virtual MoveResult movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) = 0;
  // 4 KiB pages of a process per node, as the kernel counts them (numa_maps): one file
  // read, where hotPages walks every page.
  virtual std::map<int, std::uint64_t> pagesPerNode(int pid) = 0;
  // One round of access tracking for a process (idle page tracking on Linux).
  virtual void trackHotness(int /*pid*/) {}
  // Where hotPages' hotness comes from, for the log: "idle" (scans that saw the page
  // touched) or "hw" (the page-access counters' counts).
  virtual std::string hotnessSource() const { return "idle"; }
  // The other source ("idle" beside "hw", or "hw" beside "idle"), kept only to compare its
  // choice with the one in use on the same state; "" when not asked for or not available.
  virtual std::string shadowHotnessSource() const { return ""; }
  // The shadow source's hotness of a process's pages on `node` (node < 0: all), as
  // address -> count (absent = 0); the counters then ask that node's memory alone, as
  // hotPages does, so that either source in use pays the same for its shadow.
  virtual std::map<std::uintptr_t, std::uint32_t> shadowHotness(int /*pid*/, int /*node*/) {
    return {};
  }
  // The process's pages among the counted memories' hottest frames, hottest first; empty
  // without page-access counters (QEMU, a gem5 board without them): see hasPageCounters.
  virtual std::vector<AccessedPage> accessedPages(int /*pid*/) { return {}; }
  virtual bool hasPageCounters() const { return false; }
  // Clear every counted memory's counts, first CPUs and types (a frame keeps its first
  // CPU for life otherwise: the set-up's loader would own every page). False: no counters.
  virtual bool resetPageCounters() { return false; }
  // Every CPU's miss counters, read now; empty when the machine has none (QEMU).
  virtual std::map<int, MissSample> missCounters() { return {}; }
  // Throttle the memory bandwidth of these CPUs (level 0 = off).
  virtual Status setBandwidthThrottle(const std::vector<int>& /*cpus*/, int /*level*/) {
    return Status::failure("this machine has no bandwidth throttle (gem5 board without "
                           "counters, or QEMU)");
  }
  // HeteroOS-LRU (seed 002): up to maxPages of a process's heap pages on `node` that the
  // kernel's LRU holds inactive (on an LRU list, not active, not unevictable); empty when
  // the machine cannot tell.
  virtual std::vector<std::uintptr_t> inactivePages(int /*pid*/, int /*node*/,
                                                    std::size_t /*maxPages*/) {
    return {};
  }
  // The same for the page cache of the regular files a process has open, pages it need not
  // have mapped, on any of `nodes`: `pages` (with their node) are addresses in the address
  // space of process `owner` (on Linux a mapping of the agent's own, kept until the next
  // call for this pid or releaseApp), so that movePages(owner, ...) moves them.
  struct FilePages {
    int owner = 0;
    std::vector<PageInfo> pages;
    std::size_t files = 0;  // regular files open
    std::size_t cached = 0;  // their pages in the page cache, on any node
  };
  virtual FilePages inactiveFilePages(int /*pid*/, const std::set<int>& /*nodes*/,
                                      std::size_t /*maxPages*/) {
    return {};
  }
  // The best-effort jobs' processes (the BE cgroup's cgroup.procs); empty if unknown.
  virtual std::vector<int> bePids() { return {}; }
  // Whether an app still runs: false once its process has exited (a zombie counts as
  // exited) or its cgroup is no longer populated. An app whose pid is not known is alive.
  virtual bool alive(const AppHandle& app) = 0;
  // An app that exited: give back what the machine kept for it (its cgroup).
  virtual void releaseApp(const AppHandle& /*app*/) {}
  // Once per interval, first: finish what could not be done at once (a cgroup whose
  // last process was still writing its results when its app was released).
  virtual void housekeeping() {}
};

}  // namespace pimcloud
