// Internal: the server side shared by integrated and TCP modes: a FIFO of scheduled
// requests, the fixed pool of workers, the monitor (live statistics every interval) and
// the control channel (replication commands).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pimcloud/harness/live_stats.h"
#include "pimcloud/harness/records.h"
#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/service.h"
#include "pimcloud/harness/sim_hooks.h"

namespace pimcloud::harness::detail {

struct Work {
  std::uint64_t id = 0;
  std::uint64_t scheduled_ns = 0;
  Request request;
  // Called by the worker with the record and the answer (integrated: keep them;
  // TCP server: send the answer back).
  std::function<void(int worker, const RequestRecord&, Response&&, Request&&)> done;
};

class WorkQueue {
 public:
  void push(Work work);
  bool pop(Work& out);  // false once closed and empty
  void close();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
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

 private:
  void worker_loop(int index);
  void monitor_loop();
  void control_loop();
  std::string handle_command(const std::string& command);

  Service& service_;
  const HarnessOptions& options_;
  WorkQueue queue_;
  IntervalStats stats_;
  StatsPublisher publisher_;
  std::unique_ptr<SimHooks> hooks_;
  std::vector<std::thread> workers_;
  std::thread monitor_, control_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> measured_{false};
  mutable std::mutex tids_mutex_;
  std::condition_variable tids_ready_;
  std::vector<pid_t> tids_;
  int registered_ = 0;
  mutable std::mutex lines_mutex_;
  std::vector<std::string> lines_;
  std::vector<int> replicas_;
  int control_fd_ = -1;
  std::uint64_t started_ns_ = 0;
};

}  // namespace pimcloud::harness::detail
