#include "server_core.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "pimcloud/harness/clock.h"

namespace pimcloud::harness::detail {

Request make_request_locked(Service& service, Rng& rng) {
  static std::mutex maker;
  std::lock_guard lock(maker);
  return service.make_request(rng);
}

bool WorkQueue::push_open(Work work) {
  work.released_ns = now_ns();
  {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    items_.push_back(std::move(work));
  }
  ready_.notify_one();
  return true;
}

void WorkQueue::push(Work work) {
  work.released_ns = now_ns();
  {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(work));
  }
  ready_.notify_one();
}

bool WorkQueue::pop(Work& out) {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] { return closed_ || !items_.empty(); });
  if (items_.empty()) return false;
  out = std::move(items_.front());
  items_.pop_front();
  return true;
}

std::size_t WorkQueue::discard() {
  std::lock_guard lock(mutex_);
  const auto before = items_.size();
  // Profiling probes stay: the agent waits for their window.
  items_.erase(std::remove_if(items_.begin(), items_.end(),
                              [](const Work& w) { return !w.probe; }),
               items_.end());
  return before - items_.size();
}

void WorkQueue::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  ready_.notify_all();
}

ServerCore::ServerCore(Service& service, const HarnessOptions& options)
    : service_(service),
      options_(options),
      stats_(options.app, options.threads),
      publisher_(options.stats_file, options.stats_socket),
      hooks_(make_sim_hooks(options.gem5, options.gem5_work_type)),
      tids_(static_cast<std::size_t>(options.threads), 0),
      probe_rng_(options.seed * 0xD1B54A32D192ED03ULL + 7) {}

ServerCore::~ServerCore() {
  if (!stopping_) finish();
}

void ServerCore::start() {
  if (!options_.service_started) service_.start(options_.threads);
  started_ns_ = now_ns();
  for (int i = 0; i < options_.threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  {
    std::unique_lock lock(tids_mutex_);
    tids_ready_.wait(lock, [&] { return registered_ == options_.threads; });
  }
  stats_.set_tids(tids());
  if (!options_.tids_file.empty()) {
    std::string text = "{\"app\":\"" + options_.app + "\",\"pid\":" + std::to_string(getpid()) +
                       ",\"tids\":[";
    const auto ids = tids();
    for (std::size_t i = 0; i < ids.size(); ++i) text += (i ? "," : "") + std::to_string(ids[i]);
    atomic_write(options_.tids_file, text + "]}\n");
  }
  if (!options_.control_socket.empty()) {
    control_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (options_.control_socket.size() >= sizeof addr.sun_path) {
      throw std::runtime_error("--control-socket path is too long (keep it under 108 bytes)");
    }
    std::memcpy(addr.sun_path, options_.control_socket.c_str(), options_.control_socket.size());
    unlink(options_.control_socket.c_str());
    if (bind(control_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error("--control-socket " + options_.control_socket + ": " +
                               std::strerror(errno));
    }
    timeval timeout{0, 100'000};
    setsockopt(control_fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    control_ = std::thread([this] { control_loop(); });
  }
  monitor_ = std::thread([this] { monitor_loop(); });
  if (!options_.control_file.empty()) profiler_ = std::thread([this] { profile_loop(); });
}

std::vector<pid_t> ServerCore::tids() const {
  std::lock_guard lock(tids_mutex_);
  return tids_;
}

std::vector<std::string> ServerCore::live_lines() const {
  std::lock_guard lock(lines_mutex_);
  return lines_;
}

void ServerCore::worker_loop(int index) {
  {
    std::lock_guard lock(tids_mutex_);
    tids_[static_cast<std::size_t>(index)] = gettid();
    ++registered_;
  }
  tids_ready_.notify_all();
  Work work;
  while (queue_.pop(work)) {
    RequestRecord record;
    record.request_id = work.id;
    record.thread = static_cast<std::uint32_t>(index);
    record.scheduled_ns = work.scheduled_ns;
    record.released_ns = work.released_ns;
    record.start_ns = now_ns();
    hooks_->work_begin(work.id, static_cast<std::uint64_t>(index));
    Response response = service_.serve(work.request, index);
    hooks_->work_end(work.id, static_cast<std::uint64_t>(index));
    record.end_ns = now_ns();
    record.service_ns = record.end_ns - record.start_ns;
    record.serial_ns = response.serial_ns;
    record.serial_wait_ns = response.serial_wait_ns;
    if (!work.probe && static_cast<long long>(work.id) >= options_.warmup) measured_.store(true);
    stats_.add(index, record);
    work.done(index, record, std::move(response), std::move(work.request));
  }
}

void ServerCore::monitor_loop() {
  std::unique_lock lock(monitor_mutex_);
  std::uint64_t next = started_ns_ + options_.interval_ns;
  std::uint64_t last = started_ns_;
  const std::uint64_t margin = std::min<std::uint64_t>(10'000'000, options_.interval_ns / 10);
  for (;;) {
    if (!stopping_) {
      monitor_wake_.wait_until(lock, next,
                               [&] { return stopping_.load() || cut_request_.has_value(); });
    }
    const bool last_round = stopping_.load();
    const std::uint64_t t = now_ns();
    if (!last_round && !cut_request_ && t < next) continue;  // woken early for nothing
    // A line is inside a profiling window when probes ran through all of its interval.
    Window* inside = nullptr;
    if (!windows_.empty() && last >= windows_.back().start_ns &&
        t <= windows_.back().request.end_ns()) {
      inside = &windows_.back();
    }
    const double offered = options_.schedule.rps_at(static_cast<double>(t - started_ns_) / 1e9);
    double rps = 0;
    std::string line = stats_.take_interval(t, t - last, measured_ ? "measured" : "warmup",
                                            offered, inside ? inside->request.json() : "null",
                                            &rps);
    publisher_.publish(line);
    hooks_->dump_reset_stats();
    if (inside) {
      inside->max_rps = std::max(inside->max_rps, rps);
      ++inside->intervals;
    }
    {
      std::lock_guard lines_lock(lines_mutex_);
      lines_.push_back(std::move(line));
    }
    last = t;
    if (last_round) return;
    if (cut_request_) {
      // The next lines end `margin` before the agent's ticks at request.t_ns + k * interval;
      // a first line shorter than half an interval is merged into the one after.
      const std::uint64_t base = cut_request_->t_ns;
      std::uint64_t k = t > base ? (t - base) / options_.interval_ns + 1 : 1;
      while (base + k * options_.interval_ns - margin < t + options_.interval_ns / 2) ++k;
      next = base + k * options_.interval_ns - margin;
      Window w;
      w.request = *cut_request_;
      w.start_ns = t;
      windows_.push_back(w);
      cut_request_.reset();
      profile_wake_.notify_all();
    } else {
      next += options_.interval_ns;
      if (next <= t) next = t + options_.interval_ns;  // fell behind: do not burst
    }
  }
}

void ServerCore::cut_interval(const ProfileRequest& request) {
  std::unique_lock lock(monitor_mutex_);
  cut_request_ = request;
  monitor_wake_.notify_all();
  profile_wake_.wait(lock, [&] { return !cut_request_ || stopping_.load(); });
}

void ServerCore::inject_probe() {
  Request request = make_request_locked(service_, probe_rng_);
  const std::uint64_t id = kProbeIdBit | probe_seq_++;
  Work work{id, now_ns(), std::move(request),
            [this](int, const RequestRecord&, Response&&, Request&&) {
              ++probes_done_;
              // Closed loop: each answer inside the window sends the next request.
              if (now_ns() < probe_until_.load()) inject_probe();
            },
            true};
  queue_.push_open(std::move(work));
}

void ServerCore::run_window(const ProfileRequest& request) {
  CorePin pin(tids(), request.cpu);
  cut_interval(request);
  const std::uint64_t probes_before = probes_done_.load();
  probe_until_ = request.end_ns();
  // As many requests in flight as there are workers: every worker always has one.
  for (int i = 0; i < options_.threads; ++i) inject_probe();
  {
    std::unique_lock lock(monitor_mutex_);
    profile_wake_.wait_until(lock, request.end_ns(), [&] { return stopping_.load(); });
  }
  probe_until_ = 0;
  pin.restore();
  std::lock_guard lock(monitor_mutex_);
  if (windows_.empty()) return;
  Window& w = windows_.back();
  w.end_ns = std::min(now_ns(), request.end_ns());
  w.probes = probes_done_.load() - probes_before;
  w.pinned = pin.pinned();
  w.error = pin.error();
  char text[256];
  std::snprintf(text, sizeof text,
                "profile %s cpu %d: %.0f ms, %llu requests, max %.1f RPS over %d intervals",
                request.core_type.c_str(), request.cpu,
                static_cast<double>(w.end_ns - w.start_ns) / 1e6,
                static_cast<unsigned long long>(w.probes), w.max_rps, w.intervals);
  std::cerr << options_.app << ": " << text << (w.error.empty() ? "" : "; " + w.error) << '\n';
}

void ServerCore::profile_loop() {
  ControlFileReader reader(options_.control_file);
  std::uint64_t bad_lines = 0;
  while (!stopping_) {
    for (const std::string& line : reader.poll()) {
      // The agent's replicas come through the same file (a campaign gives no socket);
      // with a socket they come there too, and only the socket's are carried out (two
      // channels would not keep their order).
      if (const auto command = parse_placement_command(line, options_.app)) {
        if (options_.control_socket.empty()) {
          std::cerr << options_.app << ": " << handle_command(*command) << '\n';
        }
        continue;
      }
      std::string error;
      const auto request = parse_profile_request(line, options_.app, error);
      if (!error.empty() && bad_lines++ < 5) {
        std::cerr << options_.app << ": --control-file " << options_.control_file << ": "
                  << error << ": " << line << '\n';
      }
      // Requests whose window is over (an earlier run's, or read too late) need no answer.
      if (request && request->end_ns() > now_ns() && !stopping_) run_window(*request);
    }
    std::unique_lock lock(monitor_mutex_);
    profile_wake_.wait_until(lock, now_ns() + 5'000'000, [&] { return stopping_.load(); });
  }
}

std::vector<std::string> ServerCore::profile_results() const {
  std::lock_guard lock(monitor_mutex_);
  std::vector<std::string> out;
  for (const Window& w : windows_) {
    char rps[64];
    std::snprintf(rps, sizeof rps, "%.3f", w.max_rps);
    const double seconds = static_cast<double>(w.end_ns - w.start_ns) / 1e9;
    char mean[64];
    std::snprintf(mean, sizeof mean, "%.3f",
                  seconds > 0 ? static_cast<double>(w.probes) / seconds : 0.0);
    std::string error = "\"";
    for (const char c : w.error) error += (c == '"' || c == '\\') ? '\'' : c;
    out.push_back("{\"request\":" + w.request.json() + ",\"duration_ms\":" +
                  std::to_string(w.request.duration_ns / 1'000'000) +
                  ",\"start_ns\":" + std::to_string(w.start_ns) +
                  ",\"end_ns\":" + std::to_string(w.end_ns) +
                  ",\"probe_requests\":" + std::to_string(w.probes) +
                  ",\"probe_rps\":" + mean + ",\"intervals\":" + std::to_string(w.intervals) +
                  ",\"max_rps\":" + rps + ",\"pinned_threads\":" + std::to_string(w.pinned) +
                  ",\"error\":" + error + "\"}");
  }
  return out;
}

std::string ServerCore::handle_command(const std::string& command) {
  std::lock_guard lock(command_mutex_);
  std::istringstream in(command);
  std::string verb;
  int node = -1;
  in >> verb >> node;
  if ((verb != "replicate" && verb != "drop") || node < 0) {
    return "error: unknown command '" + command + "'; send 'replicate NODE' or 'drop NODE'";
  }
  std::string error;
  const bool ok = verb == "replicate" ? service_.replicate(node, error)
                                      : service_.drop_replica(node, error);
  if (!ok) return "error: " + verb + " " + std::to_string(node) + ": " + error;
  if (verb == "replicate") {
    if (std::find(replicas_.begin(), replicas_.end(), node) == replicas_.end()) {
      replicas_.push_back(node);
    }
  } else {
    std::erase(replicas_, node);
  }
  stats_.set_replicas(replicas_);
  return "ok " + verb + " " + std::to_string(node);
}

void ServerCore::control_loop() {
  char buf[512];
  while (!stopping_) {
    sockaddr_un from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = recvfrom(control_fd_, buf, sizeof buf - 1, 0,
                               reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0) continue;  // timeout: look at stopping_ again
    std::string command(buf, static_cast<std::size_t>(n));
    while (!command.empty() && (command.back() == '\n' || command.back() == '\0')) {
      command.pop_back();
    }
    const std::string reply = handle_command(command);
    std::cerr << options_.app << ": control: " << reply << '\n';
    if (from_len > sizeof(sa_family_t) && from.sun_path[0] != '\0') {
      sendto(control_fd_, reply.data(), reply.size(), MSG_DONTWAIT,
             reinterpret_cast<sockaddr*>(&from), from_len);
    }
  }
}

void ServerCore::finish() {
  queue_.close();
  for (auto& w : workers_) w.join();
  workers_.clear();
  {
    std::lock_guard lock(monitor_mutex_);
    stopping_ = true;
  }
  monitor_wake_.notify_all();
  profile_wake_.notify_all();
  // The control thread waits in recvfrom for up to its 100 ms timeout: wake it now (a
  // shut-down socket reads end-of-file), not a timeout later, on the detailed cores.
  if (control_fd_ >= 0) shutdown(control_fd_, SHUT_RDWR);
  if (profiler_.joinable()) profiler_.join();
  if (monitor_.joinable()) monitor_.join();
  if (control_.joinable()) control_.join();
  if (control_fd_ >= 0) {
    close(control_fd_);
    unlink(options_.control_socket.c_str());
    control_fd_ = -1;
  }
}

}  // namespace pimcloud::harness::detail
