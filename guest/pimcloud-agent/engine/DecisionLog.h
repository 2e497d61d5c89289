// Every decision as one JSON line, flushed at once, so a timeline (the paper's Fig. 11)
// can be drawn while the scenario runs:
//   {"t_ns":..,"event":"upsize","app":"xapian","from_cores":[4,5],"to_cores":[4,5,6],
//    "pages_moved":0,"slack":-0.12,"reason":"...","placement":[...]}
// and a summary (JSON, written atomically) at exit.
#pragma once

#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "policy/Types.h"

namespace pimcloud {

std::string decisionToJson(const Decision& d);

class DecisionLog {
 public:
  DecisionLog() = default;  // in memory only (tests)
  explicit DecisionLog(const std::string& path);  // "-" = stdout
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  bool ok() const { return path_.empty() || file_ != nullptr; }
  void write(const Decision& d);
  void note(std::int64_t tNs, const std::string& event, const std::string& reason);
  // CPU time of one interval: the policy's decisions alone, and the whole interval
  // (reading stats, cgroup writes, page moves, hotness scans).
  void addIntervalCost(double policySeconds, double totalSeconds);
  void countInterval(const std::string& app, bool violated);
  // Host time of one part of an interval (poll, policy, apply, gather, hotness, moves):
  // the summary keeps each part's largest, to show which step a long interval spent.
  void addPhaseTime(const std::string& phase, std::int64_t ns) {
    auto& m = maxPhaseNs_[phase];
    m = std::max(m, ns);
  }
  // Host time between the starts of two intervals (the loop's period as kept), and the
  // interval that began after it.
  void addIntervalGap(std::int64_t ns, std::int64_t tNs) {
    if (ns <= maxGapNs_) return;
    maxGapNs_ = ns;
    maxGapAtNs_ = tNs;
  }

  std::string summaryJson(const std::string& policy) const;
  // Atomic: written to a temporary file beside it, then renamed.
  bool writeSummary(const std::string& path, const std::string& policy, std::string& error) const;

  std::uint64_t decisions() const { return decisions_; }
  const std::map<std::string, std::uint64_t>& events() const { return events_; }
  // In-memory logs (no path) keep every decision, for tests.
  const std::vector<Decision>& history() const { return history_; }

 private:
  struct PerApp {
    std::map<std::string, std::uint64_t> events;
    std::uint64_t pagesMoved = 0;
    std::uint64_t intervals = 0;
    std::uint64_t violated = 0;
    std::string lastCores;
  };
  std::string path_;
  std::FILE* file_ = nullptr;
  std::vector<Decision> history_;
  std::uint64_t decisions_ = 0;
  std::map<std::string, std::uint64_t> events_;
  std::map<std::string, PerApp> apps_;
  std::uint64_t intervalsTimed_ = 0;
  double cpuSeconds_ = 0;
  double maxCpuSeconds_ = 0;
  double policySeconds_ = 0;
  double maxPolicySeconds_ = 0;
  std::int64_t maxGapNs_ = 0;
  std::int64_t maxGapAtNs_ = 0;
  std::map<std::string, std::int64_t> maxPhaseNs_;
};

bool atomicWriteText(const std::string& path, const std::string& text, std::string& error);

}  // namespace pimcloud
