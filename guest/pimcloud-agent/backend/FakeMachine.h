// An in-memory Machine for unit tests, with a queueing model that turns each app's load
// and cores into latency, so policies can be driven through whole load traces.
// Unit tests only: the real thing is LinuxMachine.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backend/Machine.h"
#include "engine/LatencySource.h"
#include "policy/Topology.h"

namespace pimcloud {

struct FakeAppModel {
  double load = 0;          // offered RPS
  double maxRpsHost = 0;    // per host core
  double maxRpsPim = 0;     // per PIM core on the app's home stack
  double remoteFactor = 0.7;  // a PIM core away from the app's pages runs this much slower
  double serviceNs = 1e6;
  int homeNode = 1;         // where its pages are
};

class FakeMachine : public Machine {
 public:
  explicit FakeMachine(const Topology& topology);

  void addApp(const std::string& name, int pid, const FakeAppModel& model, int threads = 4,
              std::size_t pages = 0);
  void removeApp(const std::string& name);
  void setLoad(const std::string& name, double rps) { models_.at(name).load = rps; }
  FakeAppModel& model(const std::string& name) { return models_.at(name); }
  // Latency of one interval under the current cores (deterministic).
  IntervalStats sample(const std::string& name, std::int64_t tNs) const;
  double capacity(const std::string& name) const;
  std::vector<std::string> apps() const;

  // What the policy did, for assertions.
  std::map<std::string, std::vector<int>> appCpus;
  std::map<std::string, int> appPids;  // pid given with the last setAppCpus
  std::map<int, std::vector<int>> threadCpus;
  std::vector<int> beCpus;
  double beQuota = 0;
  std::map<int, int> throttle;  // cpu -> bandwidth throttle level set
  std::map<int, MissSample> misses;  // what missCounters() reads (tests advance it)
  std::map<int, MissSample> missCounters() override { return misses; }
  Status setBandwidthThrottle(const std::vector<int>& cpus, int level) override {
    for (int cpu : cpus) throttle[cpu] = level;
    return Status::success();
  }
  std::map<int, std::uint64_t> freeBytes;  // per node
  std::map<int, std::vector<PageInfo>> pagesOf;  // per pid
  // The page-access counters: per page address, who touched it (its node is pagesOf's).
  bool pageCounters = false;
  std::map<std::uintptr_t, AccessedPage> accessed;
  bool hasPageCounters() const override { return pageCounters; }
  // hotPages' hotness from the counters ("hw", LinuxMachine with `hotness = "hw"`) or
  // idle tracking; the fake's pages carry theirs either way.
  std::string hotness = "idle";
  std::string hotnessSource() const override { return hotness; }
  // The shadow source's name and counts (address -> count), as LinuxMachine with
  // `hotness_shadow` keeps them.
  std::string shadowSource;
  std::map<std::uintptr_t, std::uint32_t> shadowCounts;
  std::string shadowHotnessSource() const override { return shadowSource; }
  std::map<std::uintptr_t, std::uint32_t> shadowHotness(int /*pid*/, int /*node*/) override {
    return shadowCounts;
  }
  int counterResets = 0;
  bool resetPageCounters() override {
    counterResets += pageCounters;
    return pageCounters;
  }
  std::vector<AccessedPage> accessedPages(int pid) override;
  std::set<int> deadTids;
  std::set<std::string> deadApps;  // setAppCpus reports "gone"
  int setAppCpusCalls = 0;

  // Free memory the kernel reports but will not give a page move (below its watermarks):
  // the fake then fails with ENOMEM although the agent saw room.
  std::map<int, std::uint64_t> unusableBytes;
  std::map<int, std::uint64_t> freeBytesPerNode() override {
    auto out = freeBytes;
    for (const auto& [node, bytes] : unusableBytes) out[node] += bytes;
    return out;
  }
  Status setAppCpus(const AppHandle& app, const std::vector<int>& cpus) override;
  Status pinThread(int tid, const std::vector<int>& cpus) override;
  Status setBeCpus(const std::vector<int>& cpus) override;
  Status setBeQuota(double fraction) override;
  std::vector<PageInfo> hotPages(int pid, int node) override;
  std::vector<PageInfo> pagesOn(int pid, int node) override;
  MoveResult movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) override;
  bool alive(const AppHandle& app) override { return deadApps.count(app.name) == 0; }
  std::vector<int> bePidList;  // what bePids() reads (their pages in pagesOf)
  std::vector<int> bePids() override { return bePidList; }
  std::map<int, std::uint64_t> pagesPerNode(int pid) override {
    std::map<int, std::uint64_t> out;
    for (const PageInfo& p : pagesOf[pid]) ++out[p.node];
    ++pagesPerNodeCalls;
    return out;
  }
  int pagesPerNodeCalls = 0;
  int hotPagesCalls = 0;
  int pagesOnCalls = 0;
  void releaseApp(const AppHandle& app) override { released.push_back(app.name); }
  std::vector<std::string> released;  // apps whose machine state was given back
  // Host time the fake "spends" per page moved (Engine's migration budget), and its clock.
  std::int64_t nsPerPageMoved = 0;
  std::int64_t clockNs = 0;
  std::set<std::uintptr_t> busyPages;  // move_pages answers EBUSY for these
  // HeteroOS-LRU: the pages (of any pid) the kernel's LRU holds active; every other page
  // is inactive. The page cache of an app's open files is pagesOf[pageCacheOwner(pid)].
  std::set<std::uintptr_t> activePages;
  std::map<int, std::size_t> openFiles;  // per app pid
  static int pageCacheOwner(int pid) { return 1'000'000 + pid; }
  int fileScans = 0;
  std::vector<std::uintptr_t> inactivePages(int pid, int node, std::size_t maxPages) override;
  FilePages inactiveFilePages(int pid, const std::set<int>& nodes, std::size_t maxPages) override;

  static constexpr std::uint64_t kPageBytes = 4096;

 private:
  std::vector<PageInfo> pagesAt(int pid, int node) const;  // pagesOf's on `node` (<0: all)
  const Topology* topology_;
  std::map<std::string, FakeAppModel> models_;
  std::map<std::string, int> pids_;
  std::map<std::string, std::vector<int>> tids_;
  friend class FakeLatencySource;
};

// Publishes FakeMachine's modelled latency as the harness would.
class FakeLatencySource : public LatencySource {
 public:
  explicit FakeLatencySource(FakeMachine& machine) : machine_(&machine) {}
  void start(const std::string& name, double qosNs, double maxRpsHost, double maxRpsPim,
             int threads = 4);
  void exit(const std::string& name);
  void setTime(std::int64_t tNs) { tNs_ = tNs; }
  LatencyBatch poll() override;

 private:
  FakeMachine* machine_;
  std::vector<AppEvent> events_;
  std::int64_t tNs_ = 0;
};

}  // namespace pimcloud
