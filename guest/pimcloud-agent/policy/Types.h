// Values that flow between the engine and the policies. No Linux calls here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pimcloud {

using AppId = int;
inline constexpr AppId kBePool = -1;  // owner of every core no LC app holds

// A latency-critical application as the policies know it.
struct AppSpec {
  std::string name;
  double qosNs = 0;        // p99 target
  double maxRpsHost = 0;   // profiling: max RPS on one host core (500 ms)
  double maxRpsPim = 0;    // profiling: max RPS on one PIM core (500 ms)
  int threads = 0;         // worker threads (0 = unknown)
  double preference() const { return maxRpsPim > 0 ? maxRpsHost / maxRpsPim : 0.0; }  // R_i
};

// The profile request a live-statistics line was measured for, as the harness echoes it
// in the line's "profile" field (workloads/harness, profiling.h): the request's own t_ns,
// cpu and core_type.
struct ProfileMarker {
  std::int64_t tNs = 0;
  int cpu = -1;
  std::string coreType;
};

// One monitoring interval of one app, as the harness publishes it.
struct IntervalStats {
  std::int64_t tNs = 0;         // end of the interval
  std::int64_t intervalNs = 0;  // its length (0 = not given)
  double p99Ns = 0;
  double meanNs = 0;
  std::uint64_t count = 0;  // completed requests in the interval
  double rps = 0;
  std::vector<int> tids;    // worker thread ids (may be empty)
  int pid = 0;              // the service process (0 = not given)
  // A harness that marks profiling windows sends "profile" on every line: the request
  // whose window holds the whole interval, or null. Older harnesses send no such field.
  bool marksProfiles = false;
  std::optional<ProfileMarker> profile;
};

// What the engine hands a policy every interval.
struct Observation {
  std::int64_t tNs = 0;
  std::map<AppId, IntervalStats> stats;
  std::map<int, std::uint64_t> freeBytes;  // per stack (1..M)
  // Seed 003's memory-latency estimate of each app over the interval just ended, from
  // the board's miss counters; empty where the machine has none (QEMU).
  std::map<AppId, double> memLatencyNs;
};

// Dynamic data placement a policy asks for; placement/ decides the pages.
struct PlacementRequest {
  // MoveBePages: `fraction` of the best-effort jobs' pages on `fromStack` (hottest first)
  // move to `stack` (BALM's page migration, seed 001).
  enum class Kind { MigrateThreadTo, MigrateThreadBack, Replicate, DropReplicas, MoveBePages };
  Kind kind = Kind::MigrateThreadTo;
  AppId app = kBePool;
  int core = -1;   // the remote PIM core concerned (Migrate*)
  int stack = 0;   // target stack (MigrateThreadTo, Replicate, DropReplicas, MoveBePages) or resident
  int fromStack = -1;     // MoveBePages: the stack the pages leave
  double fraction = 1.0;  // MoveBePages: of the pages found there
};
const char* toString(PlacementRequest::Kind kind);

// One decision, logged as one JSON line.
struct Decision {
  std::int64_t tNs = 0;
  std::string event;   // e.g. "upsize", "downsize", "downsize-revert", "oversubscribed"
  AppId app = kBePool;
  std::string appName;
  std::vector<int> fromCores;  // Linux CPUs before
  std::vector<int> toCores;    // Linux CPUs after
  std::optional<double> slack;
  std::string reason;
  std::vector<PlacementRequest> placement;
  std::uint64_t pagesMoved = 0;  // filled in by the engine after placement
  // Measurements the event carries ("latency-estimate": estimate_ns, misses), in the
  // log as "values" (absent when empty).
  std::map<std::string, double> values;
};

// Which Linux CPUs each app (and the BE pool) may run on.
struct Assignment {
  bool exclusive = true;  // false: sets may overlap (Default, AMS-like)
  std::map<AppId, std::vector<int>> appCpus;
  std::vector<int> beCpus;
  // Memory-bandwidth throttle level of the BE CPUs (the board's counters; 0 = off).
  int beThrottle = 0;
  // CPU quota of the BE jobs in cores (cgroup cpu.max over the BE CPUs; 0 = unlimited).
  double beQuotaCores = 0;
  std::map<AppId, int> residentStack;  // for static placement and replication
  // Remote PIM cores: each gets one thread of its own, never context-switched (IV-E2).
  std::map<AppId, std::vector<int>> dedicatedCpus;
};

}  // namespace pimcloud
