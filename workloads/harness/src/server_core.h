// Internal: the server side shared by integrated and TCP modes: a FIFO of scheduled
// requests, the fixed pool of workers, the monitor (live statistics every interval), the
// control channel (replication commands) and the profiler (the agent's profile requests).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pimcloud/harness/live_stats.h"
#include "pimcloud/harness/profiling.h"
#include "pimcloud/harness/records.h"
#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/service.h"
#include "pimcloud/harness/sim_hooks.h"
#include "pimcloud/harness/wake_event.h"

namespace pimcloud::harness::detail {

struct Work {
  std::uint64_t id = 0;
  std::uint64_t scheduled_ns = 0;
  Request request;
  // Called by the worker with the record and the answer (integrated: keep them;
  // TCP server: send the answer back).
  std::function<void(int worker, const RequestRecord&, Response&&, Request&&)> done;
  bool probe = false;  // a profiling request: live statistics only, never a record
  std::uint64_t released_ns = 0;  // stamped by WorkQueue::push: it entered the queue
};

// Ids of profiling requests carry this bit, apart from the load generator's 0, 1, 2, ...
constexpr std::uint64_t kProbeIdBit = 1ULL << 63;

// Service::make_request is single-threaded by contract; the load generator and the
// profiler both call it through this.
Request make_request_locked(Service& service, Rng& rng);

class WorkQueue {
 public:
  void push(Work work);
  bool push_open(Work work);  // false (and dropped) once closed
  bool pop(Work& out);  // false once closed and empty
  std::size_t discard();  // drops the waiting requests (an early stop); how many
  void close();

 private:
  std::mutex mutex_;
  WakeEvent ready_;
  std::deque<Work> items_;
  bool closed_ = false;
};

class ServerCore {
 public:
  ServerCore(Service& service, const HarnessOptions& options);
  ~ServerCore();
  void start();
  WorkQueue& queue() { return queue_; }
  // Closes the queue, waits for the workers to drain it, stops monitor and control.
  void finish();
  std::vector<pid_t> tids() const;
  std::vector<std::string> live_lines() const;
  // One JSON object per answered profile request (summary.json's "profiles").
  std::vector<std::string> profile_results() const;

 private:
  void worker_loop(int index);
  void monitor_loop();
  void control_loop();
  void profile_loop();
  void run_window(const ProfileRequest& request);
  void inject_probe();
  // Ends the running interval now and lines the next ones up with the agent's ticks
  // (request.t_ns + k * interval, a margin early), so that each line the agent reads
  // during the window covers only the window.
  void cut_interval(const ProfileRequest& request);
  std::string handle_command(const std::string& command);

  Service& service_;
  const HarnessOptions& options_;
  WorkQueue queue_;
  IntervalStats stats_;
  StatsPublisher publisher_;
  std::unique_ptr<SimHooks> hooks_;
  std::vector<std::thread> workers_;
  std::thread monitor_, control_, profiler_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> measured_{false};
  mutable std::mutex tids_mutex_;
  WakeEvent tids_ready_;
  std::vector<pid_t> tids_;
  int registered_ = 0;
  mutable std::mutex lines_mutex_;
  std::vector<std::string> lines_;
  std::vector<int> replicas_;
  std::mutex command_mutex_;  // the control socket's thread and the control file's both command
  int control_fd_ = -1;
  std::uint64_t started_ns_ = 0;

  // Monitor and profiler state, under monitor_mutex_.
  struct Window {
    ProfileRequest request;
    std::uint64_t start_ns = 0, end_ns = 0;  // probing from the cut to the end
    std::uint64_t probes = 0;                // probe answers in the window
    double max_rps = 0;                      // largest rps of the lines inside the window
    int intervals = 0;                       // lines inside the window
    int pinned = 0;                          // threads the harness pinned itself
    std::string error;
  };
  mutable std::mutex monitor_mutex_;
  WakeEvent monitor_wake_, profile_wake_;  // not condition variables: see wake_event.h
  std::optional<ProfileRequest> cut_request_;
  std::vector<Window> windows_;
  Rng probe_rng_;
  std::atomic<std::uint64_t> probe_until_{0}, probe_seq_{0}, probes_done_{0};
};

}  // namespace pimcloud::harness::detail
