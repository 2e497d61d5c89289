// The agent's configuration: one JSON file, parsed and validated into AgentConfig.
// Every error names the field, the bad value and the fix; all errors are reported at once.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/Engine.h"
#include "placement/Placement.h"
#include "policy/Policy.h"

namespace pimcloud {

struct AppConfig {
  AppSpec spec;
  int pid = 0;  // 0: learnt from the harness's stats or start line
  std::string controlSocket;  // the service's replication control socket (optional)
  bool arrives = false;  // starts later: managed from its first statistics, not at start
};

struct TopologyConfig {
  bool fromSysfs = true;  // discover from /sys/devices/system/node
  std::vector<int> hostCpus;
  std::vector<std::vector<int>> stackCpus;  // stack k = index k-1 = NUMA node firstStack+k-1
  std::uint64_t stackBytes = 8ULL << 30;
  // placement.first_stack (exec --first-stack): the node of stack 1, 1 with a host node,
  // 0 on a PIM-only system such as arch9.
  int firstStack = 1;
};

struct AgentConfig {
  std::string policy = "pimcloud";
  PolicyParams params;
  EngineOptions engine;
  TopologyConfig topology;
  StaticPlacement staticPlacement = StaticPlacement::Concentrated;
  std::vector<AppConfig> apps;
  std::string cgroupRoot = "/sys/fs/cgroup/pimcloud";
  bool useCgroups = true;  // false: sched_setaffinity per thread
  std::string sysfsRoot = "/sys";
  std::string procRoot = "/proc";
  std::string hotness = "idle";  // "idle" page tracking or "hw" page-access counters
  bool hotnessShadow = false;  // also log the other source's choice of each migration's pages
  std::string latencyPath = "/run/pimcloud/latency.jsonl";
  std::string controlPath = "/run/pimcloud/control.jsonl";
  std::string logPath = "/run/pimcloud/decisions.jsonl";
  std::string summaryPath = "/run/pimcloud/summary.json";
};

struct ConfigResult {
  std::optional<AgentConfig> config;
  std::vector<std::string> errors;
};

ConfigResult parseConfig(const std::string& text, const std::string& source);
ConfigResult loadConfig(const std::string& path);
// Builds the policy topology from the config (when not read from sysfs).
Topology topologyFrom(const TopologyConfig& config);

}  // namespace pimcloud
