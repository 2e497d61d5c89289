// Requests from the resource manager (guest/pimcloud-agent) in its control file: profiling
// and data placement (replicas). Profiling: the agent appends
// one JSON line per request to its control file,
//   {"t_ns":..,"event":"profile","app":"xapian","core_type":"host","cpu":0,"duration_ms":500}
// having already confined the app to `cpu`, and takes the app's maximum RPS on that core
// as the largest `rps` of the live statistics lines it reads during the next duration_ms.
// The harness answers by saturating itself closed-loop for that window (see runner.h's
// --control-file), so those lines show the core's capacity rather than the offered load.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pimcloud::harness {

struct ProfileRequest {
  std::string app;
  std::string core_type;   // "host" or "pim" (as the agent names them; not interpreted)
  int cpu = -1;            // the core to saturate (-1: none given, no pinning)
  std::uint64_t t_ns = 0;  // CLOCK_MONOTONIC when the agent asked: the window starts here
  std::uint64_t duration_ns = 0;

  std::uint64_t end_ns() const { return t_ns + duration_ns; }
  // {"t_ns":..,"cpu":..,"core_type":".."}: names the request in live statistics lines.
  std::string json() const;
};

// The profile request in one control-file line, if it is one for `app`. Other events and
// other apps' requests give nullopt; a malformed line gives nullopt and sets `error` to
// what is wrong with it.
std::optional<ProfileRequest> parse_profile_request(const std::string& line,
                                                    const std::string& app, std::string& error);

// A data-placement request for `app` in one control-file line: the agent's
//   {"t_ns":..,"event":"replicate","app":"imgdnn","node":1}   (or "drop-replicas")
// as the command the control socket takes ("replicate 1", "drop 1"); nullopt for any
// other line (profile requests, other apps, malformed lines).
std::optional<std::string> parse_placement_command(const std::string& line,
                                                   const std::string& app);

// Reads the lines appended to a file since the last call, from its beginning, without
// blocking; a missing file is not an error (the agent creates it with its first request),
// and a partial last line waits for the rest.
class ControlFileReader {
 public:
  explicit ControlFileReader(std::string path) : path_(std::move(path)) {}
  ~ControlFileReader();
  ControlFileReader(const ControlFileReader&) = delete;
  ControlFileReader& operator=(const ControlFileReader&) = delete;
  std::vector<std::string> poll();

 private:
  std::string path_;
  int fd_ = -1;
  std::string partial_;
};

// Pins each thread to `cpu` unless it already runs only there (the agent's cpuset or
// affinity did it), so a window measures one core even without a manager; restore() puts
// back the masks of the threads it pinned that nobody has re-pinned since.
class CorePin {
 public:
  CorePin(const std::vector<pid_t>& tids, int cpu);
  ~CorePin() { restore(); }
  CorePin(const CorePin&) = delete;
  CorePin& operator=(const CorePin&) = delete;
  void restore();
  int pinned() const { return static_cast<int>(saved_.size()); }
  const std::string& error() const { return error_; }

 private:
  int cpu_;
  std::vector<std::pair<pid_t, std::vector<int>>> saved_;  // tid, its earlier CPU list
  std::string error_;
};

}  // namespace pimcloud::harness
