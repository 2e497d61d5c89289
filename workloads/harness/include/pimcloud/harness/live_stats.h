// Live statistics for the resource manager: every monitoring interval (100 ms) one JSON
// line with the interval's tail and mean sojourn, count, RPS and per-worker figures,
// appended to a file and/or sent as one datagram to a UNIX socket. Format in README.md.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "pimcloud/harness/records.h"

namespace pimcloud::harness {

// Collects completions from the workers; the stats thread takes one interval at a time.
class IntervalStats {
 public:
  IntervalStats(std::string app, int workers);

  // Thread-safe; `worker` in 0..workers-1.
  void add(int worker, const RequestRecord& record);
  void set_tids(std::vector<pid_t> tids);
  void set_replicas(std::vector<int> nodes);

  // The JSON line (no trailing newline) for the interval ending at `t_ns`, lasting
  // `interval_ns`; resets the interval. `phase` is "warmup" or "measured";
  // `offered_rps` is the schedule's rate at the end of the interval; `profile` is the
  // profile request (JSON) whose window holds the whole interval, or "null". The
  // interval's rps goes to `rps_out` when given.
  std::string take_interval(std::uint64_t t_ns, std::uint64_t interval_ns, const char* phase,
                            double offered_rps, const std::string& profile = "null",
                            double* rps_out = nullptr);

 private:
  struct Slot {
    std::mutex mutex;
    std::vector<std::uint64_t> sojourn_ns;
    std::uint64_t service_sum_ns = 0;
    std::uint64_t queue_sum_ns = 0;
  };
  std::string app_;
  std::vector<Slot> slots_;
  std::mutex meta_mutex_;
  std::vector<pid_t> tids_;
  std::vector<int> replicas_;
  std::uint64_t seq_ = 0;
};

// Where the lines go: a file (appended, one write per line) and/or a UNIX datagram socket
// bound by the reader (a missing reader is not an error: the line is dropped and counted).
class StatsPublisher {
 public:
  StatsPublisher(std::string file_path, std::string socket_path);
  ~StatsPublisher();
  StatsPublisher(const StatsPublisher&) = delete;
  StatsPublisher& operator=(const StatsPublisher&) = delete;

  void publish(const std::string& line);
  std::uint64_t dropped() const { return dropped_; }

 private:
  int file_fd_ = -1;
  int socket_fd_ = -1;
  std::string socket_path_;
  std::uint64_t dropped_ = 0;
};

}  // namespace pimcloud::harness
