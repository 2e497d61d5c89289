// The agent's side of the harness's live statistics (workloads/harness, live_stats.h).
// One JSON object per line or per datagram; fields the agent does not use are ignored:
//   {"app":"xapian","pid":300,"t_ns":1200000000,"p99_ns":4100000,"mean_ns":900000,
//    "count":812,"rps":8120,"tids":[301,302],"interval_ns":100000000,
//    "profile":{"t_ns":1100000000,"cpu":0,"core_type":"host"},...}   one 100 ms interval
//   {"event":"start","app":"xapian","pid":300,"qos_ns":5000000,
//    "max_rps_host":2500,"max_rps_pim":900,"threads":20}          an LC app arrives
//   {"event":"exit","app":"xapian"}                                  an LC app leaves
// FileLatencySource reads such lines from a regular file the harness appends to, or from
// a FIFO, without blocking; a partial last line waits for the rest. SocketLatencySource
// binds a UNIX datagram socket the harness sends each line to (--stats-socket).
// The start/exit lines are optional: apps may instead be listed in the config, and their
// pid is then learnt from the stats lines. "profile" is null outside the harness's
// profiling windows and absent from harnesses that do not mark them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/Types.h"

namespace pimcloud {

struct AppEvent {
  enum class Kind { Start, Exit };
  Kind kind = Kind::Start;
  std::string app;
  int pid = 0;
  AppSpec spec;  // name, qos and profile (0 = unknown: the agent profiles it)
};

struct LatencyBatch {
  std::vector<AppEvent> events;                   // in arrival order, before the stats
  std::map<std::string, IntervalStats> stats;     // latest interval per app
  // Every interval per app, in arrival order: a poll can bring several (a late tick, a
  // harness with a shorter interval), and profiling wants the largest of them.
  std::map<std::string, std::vector<IntervalStats>> lines;
  std::vector<std::string> errors;                // malformed lines, with line number

  void add(const std::string& app, const IntervalStats& s) {
    stats[app] = s;
    lines[app].push_back(s);
  }
};

class LatencySource {
 public:
  virtual ~LatencySource() = default;
  virtual LatencyBatch poll() = 0;  // everything published since the last poll
};

class FileLatencySource : public LatencySource {
 public:
  explicit FileLatencySource(std::string path) : path_(std::move(path)) {}
  ~FileLatencySource() override;
  LatencyBatch poll() override;

 private:
  std::string path_;
  int fd_ = -1;
  std::string partial_;
  std::uint64_t lineNo_ = 0;
};

class SocketLatencySource : public LatencySource {
 public:
  explicit SocketLatencySource(std::string path);  // binds; error() says why not
  ~SocketLatencySource() override;
  LatencyBatch poll() override;
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
  int fd_ = -1;
  std::uint64_t lineNo_ = 0;
};

// "unix:/path" -> SocketLatencySource, anything else -> FileLatencySource.
std::unique_ptr<LatencySource> openLatencySource(const std::string& spec, std::string& error);

// Parses one line into the batch; returns false (with an error in the batch) if malformed.
bool parseLatencyLine(const std::string& line, std::uint64_t lineNo, LatencyBatch& batch);

}  // namespace pimcloud
