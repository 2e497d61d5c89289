// The 100 ms loop: read the harness's latency stats, hand them to the policy, apply the
// policy's assignment and placement requests through the Machine, log every decision.
// Knows nothing of any particular policy. Never lets an app that vanished, a failed
// page move or a malformed stats line stop the loop.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/Machine.h"
#include "engine/DecisionLog.h"
#include "engine/HarnessControl.h"
#include "engine/LatencySource.h"
#include "engine/Profiler.h"
#include "placement/Placement.h"
#include "policy/Policy.h"

namespace pimcloud {

// The dynamic tiering beside a tiered placement (EngineOptions::tieringPages > 0).
//  Promote:   seed 004's tiering mechanism: hot slow-tier pages up to a stack; under
//             fast-always, cold pages of a stack short of twice the reserve down.
//  HeteroOsLru: seed 002's HeteroOS-LRU: when a stack runs below its watermark, the pages
//             the kernel's LRU holds inactive go down to the slow tier, heap and I/O
//             page cache alike (its on-demand allocation is the fast-preferred placement).
//  HeteroOsCoordinated: HeteroOS-LRU plus promotion of hot pages (its coordinated mode,
//             the hotness from idle tracking or the board's counters).
enum class TieringMode { Promote, HeteroOsLru, HeteroOsCoordinated };
// promote|heteroos-lru|heteroos-coordinated
std::optional<TieringMode> parseTieringMode(const std::string& name);
const char* toString(TieringMode mode);

struct EngineOptions {
  std::int64_t intervalNs = 100'000'000;
  std::int64_t profileNs = 500'000'000;   // per core type (IV-D1)
  std::uint64_t reserveBytes = 64ULL << 20;  // never fill a stack to the last page
  std::size_t pageBytes = 4096;
  double beQuota = 0;  // cpu.max fraction for BE jobs; <= 0: unlimited
  int hotnessScanIntervals = 10;  // idle-page-tracking round every this many intervals
  // Seed 003's estimate adds the caches' own latency to the mean outstanding time of a
  // miss below them (the counters start counting after the last-level cache).
  double latencyCacheNs = 0;
  // CC: when an app enters, its pages already elsewhere are gathered on its resident stack.
  StaticPlacement staticPlacement = StaticPlacement::Concentrated;
  // Page moves take at most this much host time per interval, in chunks; what is left
  // goes on in the next intervals, so the loop keeps its period under memory pressure.
  std::int64_t migrationBudgetNs = 20'000'000;
  std::size_t migrationChunkPages = 64;  // one move_pages call: its TLB shootdowns
  // Dynamic tiering under a tiered placement (seed 004): each interval, promote up to this
  // many of an app's hot pages (seen by the hotness scans) from the slow tier to the stack
  // with the most room, and under fast-always demote as many cold pages of a stack short
  // of twice the reserve to the slow tier. 0: no tiering (the allocation policy alone).
  std::size_t tieringPages = 0;
  // The slow tier's node: 0 (the host node's DDR) or a CPU-less far-memory node.
  int slowNode = kHostSlowNode;
  TieringMode tiering = TieringMode::Promote;
  // Dynamic data placement beside a static one (the paper's III-D2 "page migration ...
  // based on locality", after Verghese et al., ASPLOS 1996): each interval up to this many
  // of an app's hot private pages, as the board's page-access counters see them, move to
  // the node of the one CPU that touches them, asked every hotnessScanIntervals (the
  // query walks the reverse map of every frame it answers: tens of ms of a core in gem5).
  // 0: off. Without the counters (QEMU) the agent says so once and moves nothing.
  std::size_t localityPages = 0;
  // Replication (III-D2): when an app starts, its shared read-only data are copied to
  // every node its cores sit on (the service's replicate command; services without such
  // data decline, and the log says so).
  bool replicateShared = false;
  // Written once every app present at the start is placed (or being profiled) and its
  // pages gathered: the harness may wait for it before it starts the requests, so that
  // the initial allocation (cgroup moves, page gathers) is not inside the measured part.
  // Empty: not written.
  std::string placedPath;
  std::function<std::int64_t()> clock;  // host time for the budget; empty: CLOCK_MONOTONIC
};

class Engine {
 public:
  Engine(const Topology& topology, Policy& policy, Machine& machine, LatencySource& source,
         DecisionLog& log, HarnessControl* control, EngineOptions options);

  // An LC app known before the first interval (from the config). One that `arrives`
  // later enters the policy (an arrival, IV-E4) once it is live: its pid known from its
  // statistics or a start line.
  void addApp(const AppSpec& spec, int pid, const std::string& controlSocket = "",
              bool arrives = false);
  // One monitoring interval at time tNs.
  void tick(std::int64_t tNs);
  // Ticks every interval until `stop` is set.
  void run(const std::atomic<bool>& stop);

  const Assignment& applied() const { return applied_; }
  AppId idOf(const std::string& name) const;

 private:
  // Pages on their way to `node`, moved a chunk at a time within the interval's budget.
  struct MoveJob {
    AppId app = kBePool;  // kBePool: a best-effort process's pages (pid)
    int pid = 0;  // whose address space the pages are in: the app's when 0
    int node = -1;
    int followsCpu = -1;  // the remote core the pages follow (remembered to move back)
    std::string purpose;  // for the log: "for core 9", "gather on resident stack 2"
    std::vector<std::uintptr_t> pages;
    std::size_t next = 0;
    long decision = -1;   // index in pending_ of the decision that started it (this tick)
    bool gather = false;  // CC's gather of an entering app (the placed file waits for it)
  };

  struct Runtime {
    AppHandle handle;
    std::string controlSocket;
    AppSpec spec;
    std::vector<int> tids;
    std::map<int, int> dedicated;  // cpu -> tid
    std::map<int, std::vector<std::uintptr_t>> movedFor;  // remote cpu -> pages moved there
    bool inPolicy = false;
    bool arrives = false;
    bool concentrated = false;
    // Profiling (IV-D1): max RPS on one host core, then on one PIM core.
    int profilePhase = 0;  // 0 none, 1 host, 2 pim
    std::vector<ProfileWindow> profiles;  // the requests made so far: host, then PIM
  };

  Observation observe(std::int64_t tNs, const LatencyBatch& batch);
  void handleEvents(std::int64_t tNs, const LatencyBatch& batch);
  void profile(std::int64_t tNs, AppId id, Runtime& rt, const std::vector<IntervalStats>& lines);
  void apply(std::int64_t tNs);
  void place(Decision& d, long index);
  void concentrate(std::int64_t tNs);
  void reapExited(std::int64_t tNs);
  void estimateLatencies(std::int64_t tNs);
  void applyBeQuota(std::int64_t tNs, const Assignment& want);
  void moveBePages(const PlacementRequest& p, Decision& d, long index);
  void tier(std::int64_t tNs);
  void migrateForLocality(std::int64_t tNs);
  void replicateOnStart(std::int64_t tNs, AppId id);
  void queueTierMove(std::int64_t tNs, AppId id, const Runtime& rt, std::vector<std::uintptr_t> pages,
                     int node, const std::string& event, const std::string& why,
                     std::map<std::string, double> values = {}, int owner = 0);
  void evictInactive(std::int64_t tNs, AppId id, const Runtime& rt,
                     const std::map<int, std::uint64_t>& freeBytes,
                     const std::set<std::uintptr_t>& queued);
  void enqueueMove(MoveJob job);
  // Pages of the queued moves `which` selects that have not moved yet.
  std::set<std::uintptr_t> queuedPages(const std::function<bool(const MoveJob&)>& which) const;
  void runMoves(std::int64_t tNs);
  std::int64_t hostNs() const;
  void appGone(std::int64_t tNs, AppId id, const std::string& why);
  void control(const std::string& line);
  void serviceCommand(const Runtime& rt, const std::string& command, Decision& d);
  std::map<int, std::uint64_t> freeBytesPerStack();

  const Topology* topology_;
  Policy* policy_;
  Machine* machine_;
  LatencySource* source_;
  DecisionLog* log_;
  HarnessControl* control_;
  EngineOptions options_;
  bool started_ = false;
  bool placedWritten_ = false;  // options_.placedPath written
  void notePlaced(std::int64_t tNs);
  void learnPid(AppId id, Runtime& rt, int pid);
  bool localityNoted_ = false;  // said once that no counters means no locality migration
  bool localityReset_ = false;  // cleared the counters' first CPUs when it began
  std::uint64_t localityTicks_ = 0;  // intervals since the reset: it asks every scan
  AppId nextId_ = 0;
  std::map<AppId, Runtime> apps_;
  std::map<std::string, AppId> ids_;
  std::set<std::string> unknownNoted_;
  std::set<std::string> exited_;  // apps gone: their last stats lines are expected
  Assignment applied_;
  std::map<int, MissSample> lastMisses_;  // the previous interval's miss counters
  std::int64_t lastMissesNs_ = 0;
  std::map<AppId, double> memLatencyNs_;  // this interval's estimates, for the policy
  std::vector<Decision> pending_;
  std::deque<MoveJob> moves_;
  std::int64_t lastTickHostNs_ = -1;
  std::int64_t now_ = 0;
  std::uint64_t ticks_ = 0;
};

}  // namespace pimcloud
