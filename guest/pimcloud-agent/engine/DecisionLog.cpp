#include "engine/DecisionLog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace pimcloud {

using nlohmann::json;

std::string decisionToJson(const Decision& d) {
  json j;
  j["t_ns"] = d.tNs;
  j["event"] = d.event;
  j["app"] = d.appName;
  j["from_cores"] = d.fromCores;
  j["to_cores"] = d.toCores;
  j["pages_moved"] = d.pagesMoved;
  j["slack"] = d.slack ? json(*d.slack) : json(nullptr);
  j["reason"] = d.reason;
  json placement = json::array();
  for (const PlacementRequest& p : d.placement) {
    json entry{{"kind", toString(p.kind)}, {"core", p.core}, {"stack", p.stack}};
    if (p.kind == PlacementRequest::Kind::MoveBePages) {
      entry["from_stack"] = p.fromStack;
      entry["fraction"] = p.fraction;
    }
    placement.push_back(std::move(entry));
  }
  j["placement"] = placement;
  if (!d.values.empty()) j["values"] = d.values;
  return j.dump();
}

DecisionLog::DecisionLog(const std::string& path) : path_(path) {
  file_ = path == "-" ? stdout : std::fopen(path.c_str(), "a");
}

DecisionLog::~DecisionLog() {
  if (file_ != nullptr && file_ != stdout) std::fclose(file_);
}

void DecisionLog::write(const Decision& d) {
  ++decisions_;
  ++events_[d.event];
  PerApp& a = apps_[d.appName];
  ++a.events[d.event];
  a.pagesMoved += d.pagesMoved;
  json cores = d.toCores;
  a.lastCores = cores.dump();
  if (path_.empty()) history_.push_back(d);
  if (file_ == nullptr) return;
  const std::string line = decisionToJson(d) + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

void DecisionLog::note(std::int64_t tNs, const std::string& event, const std::string& reason) {
  Decision d;
  d.tNs = tNs;
  d.event = event;
  d.reason = reason;
  write(d);
}

void DecisionLog::addIntervalCost(double policySeconds, double totalSeconds) {
  ++intervalsTimed_;
  cpuSeconds_ += totalSeconds;
  maxCpuSeconds_ = std::max(maxCpuSeconds_, totalSeconds);
  policySeconds_ += policySeconds;
  maxPolicySeconds_ = std::max(maxPolicySeconds_, policySeconds);
}

void DecisionLog::countInterval(const std::string& app, bool violated) {
  PerApp& a = apps_[app];
  ++a.intervals;
  if (violated) ++a.violated;
}

std::string DecisionLog::summaryJson(const std::string& policy) const {
  json j;
  j["policy"] = policy;
  j["decisions"] = decisions_;
  j["events"] = events_;
  j["intervals"] = intervalsTimed_;
  const double n = intervalsTimed_ ? static_cast<double>(intervalsTimed_) : 1.0;
  j["policy_cpu_s_mean"] = policySeconds_ / n;
  j["policy_cpu_s_max"] = maxPolicySeconds_;
  j["interval_cpu_s_total"] = cpuSeconds_;
  j["interval_cpu_s_mean"] = cpuSeconds_ / n;
  j["interval_cpu_s_max"] = maxCpuSeconds_;
  j["interval_gap_max_ms"] = static_cast<double>(maxGapNs_) / 1e6;
  j["interval_gap_max_at_ns"] = maxGapAtNs_;
  json phases = json::object();
  for (const auto& [phase, ns] : maxPhaseNs_) phases[phase] = static_cast<double>(ns) / 1e6;
  j["interval_phase_max_ms"] = phases;
  json apps = json::object();
  for (const auto& [name, a] : apps_) {
    if (name.empty()) continue;
    apps[name] = {{"events", a.events},
                  {"pages_moved", a.pagesMoved},
                  {"intervals", a.intervals},
                  {"intervals_violating_qos", a.violated},
                  {"final_cores", a.lastCores.empty() ? json::array() : json::parse(a.lastCores)}};
  }
  j["apps"] = apps;
  return j.dump(2);
}

bool atomicWriteText(const std::string& path, const std::string& text, std::string& error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create " + tmp + ": " + std::strerror(errno);
    return false;
  }
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool DecisionLog::writeSummary(const std::string& path, const std::string& policy,
                               std::string& error) const {
  return atomicWriteText(path, summaryJson(policy) + "\n", error);
}

}  // namespace pimcloud
