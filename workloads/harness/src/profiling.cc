#include "pimcloud/harness/profiling.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace pimcloud::harness {

std::string ProfileRequest::json() const {
  return "{\"t_ns\":" + std::to_string(t_ns) + ",\"cpu\":" + std::to_string(cpu) +
         ",\"core_type\":" + nlohmann::json(core_type).dump() + "}";
}

std::optional<ProfileRequest> parse_profile_request(const std::string& line,
                                                    const std::string& app, std::string& error) {
  error.clear();
  if (line.find_first_not_of(" \t\r") == std::string::npos) return std::nullopt;
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "not a JSON object";
    return std::nullopt;
  }
  const auto text = [&](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  if (text("event") != "profile" || text("app") != app) return std::nullopt;
  for (const char* key : {"t_ns", "duration_ms"}) {
    if (!j.contains(key) || !j[key].is_number() || j[key].get<double>() < 0) {
      error = std::string("profile request without a number \"") + key + "\" >= 0";
      return std::nullopt;
    }
  }
  ProfileRequest r;
  r.app = app;
  r.core_type = text("core_type");
  r.cpu = j.contains("cpu") && j["cpu"].is_number_integer() ? j["cpu"].get<int>() : -1;
  r.t_ns = j["t_ns"].get<std::uint64_t>();
  r.duration_ns = static_cast<std::uint64_t>(j["duration_ms"].get<double>() * 1e6);
  return r;
}

std::optional<std::string> parse_placement_command(const std::string& line,
                                                   const std::string& app) {
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string() ||
      !j.contains("app") || j["app"] != app || !j.contains("node") ||
      !j["node"].is_number_integer() || j["node"].get<int>() < 0) {
    return std::nullopt;
  }
  const std::string event = j["event"].get<std::string>();
  const std::string node = std::to_string(j["node"].get<int>());
  if (event == "replicate") return "replicate " + node;
  if (event == "drop-replicas") return "drop " + node;
  return std::nullopt;
}

ControlFileReader::~ControlFileReader() {
  if (fd_ >= 0) close(fd_);
}

std::vector<std::string> ControlFileReader::poll() {
  std::vector<std::string> lines;
  if (fd_ < 0) {
    fd_ = open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return lines;  // no request yet
  }
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) break;
    partial_.append(buf, static_cast<std::size_t>(n));
  }
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(partial_.substr(start, nl - start));
  }
  partial_.erase(0, start);
  return lines;
}

namespace {
std::vector<int> cpus_of(const cpu_set_t& set) {
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}
}  // namespace

CorePin::CorePin(const std::vector<pid_t>& tids, int cpu) : cpu_(cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return;
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(cpu, &only);
  for (const pid_t tid : tids) {
    cpu_set_t now;
    CPU_ZERO(&now);
    if (sched_getaffinity(tid, sizeof now, &now) != 0) continue;  // gone
    const std::vector<int> before = cpus_of(now);
    if (before == std::vector<int>{cpu}) continue;  // already confined there
    if (sched_setaffinity(tid, sizeof only, &only) != 0) {
      error_ = "cannot pin thread " + std::to_string(tid) + " to CPU " + std::to_string(cpu) +
               ": " + std::strerror(errno) + " (is the CPU in the app's cpuset?)";
      continue;
    }
    saved_.emplace_back(tid, before);
  }
}

void CorePin::restore() {
  for (const auto& [tid, before] : saved_) {
    cpu_set_t now;
    CPU_ZERO(&now);
    if (sched_getaffinity(tid, sizeof now, &now) != 0) continue;
    if (cpus_of(now) != std::vector<int>{cpu_}) continue;  // someone placed it since
    cpu_set_t set;
    CPU_ZERO(&set);
    for (const int c : before) CPU_SET(c, &set);
    sched_setaffinity(tid, sizeof set, &set);
  }
  saved_.clear();
}

}  // namespace pimcloud::harness
