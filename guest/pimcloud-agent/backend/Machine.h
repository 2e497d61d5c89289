// What the agent needs from the machine, and nothing more. LinuxMachine does it through
// cgroup v2, sched_setaffinity, move_pages and idle page tracking; FakeMachine does it in
// memory for unit tests.
#pragma once

#include <cstdint>
#include <map>
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

struct MoveResult {
  std::uint64_t moved = 0;   // pages now on the target node
  std::uint64_t failed = 0;  // pages left where they were
  bool targetFull = false;   // ENOMEM: the target node has no free memory
  Status status;
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
  virtual MoveResult movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) = 0;
  // Moves every page of a process on `from` nodes to `to` (migrate_pages).
  virtual MoveResult migrateProcess(int pid, const std::vector<int>& from, int to) = 0;
  // One round of access tracking for a process (idle page tracking on Linux).
  virtual void trackHotness(int /*pid*/) {}
};

}  // namespace pimcloud
