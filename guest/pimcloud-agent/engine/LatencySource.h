// The agent's side of the harness's live statistics. One JSON object per line:
//   {"app":"xapian","t_ns":1200000000,"p99_ns":4100000,"mean_ns":900000,
//    "count":812,"rps":8120,"tids":[301,302]}                       one 100 ms interval
//   {"event":"start","app":"xapian","pid":300,"qos_ns":5000000,
//    "max_rps_host":2500,"max_rps_pim":900,"threads":20}          an LC app arrives
//   {"event":"exit","app":"xapian"}                                  an LC app leaves
// FileLatencySource reads such lines from a regular file the harness appends to, or from
// a FIFO, without blocking; a partial last line waits for the rest.
#pragma once

#include <map>
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
  std::vector<std::string> errors;                // malformed lines, with line number
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

// Parses one line into the batch; returns false (with an error in the batch) if malformed.
bool parseLatencyLine(const std::string& line, std::uint64_t lineNo, LatencyBatch& batch);

}  // namespace pimcloud
