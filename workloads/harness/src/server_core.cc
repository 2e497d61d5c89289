#include "server_core.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "pimcloud/harness/clock.h"

namespace pimcloud::harness::detail {

void WorkQueue::push(Work work) {
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
      hooks_(make_sim_hooks(options.gem5)),
      tids_(static_cast<std::size_t>(options.threads), 0) {}

ServerCore::~ServerCore() {
  if (!stopping_) finish();
}

void ServerCore::start() {
  service_.start(options_.threads);
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
    record.start_ns = now_ns();
    hooks_->work_begin(work.id, static_cast<std::uint64_t>(index));
    Response response = service_.serve(work.request, index);
    hooks_->work_end(work.id, static_cast<std::uint64_t>(index));
    record.end_ns = now_ns();
    record.service_ns = record.end_ns - record.start_ns;
    if (static_cast<long long>(work.id) >= options_.warmup) measured_.store(true);
    stats_.add(index, record);
    work.done(index, record, std::move(response), std::move(work.request));
  }
}

void ServerCore::monitor_loop() {
  std::uint64_t next = started_ns_ + options_.interval_ns;
  std::uint64_t last = started_ns_;
  for (;;) {
    const bool last_round = stopping_.load();
    if (!last_round) sleep_until_ns(next);
    const std::uint64_t t = now_ns();
    const double offered = options_.schedule.rps_at(static_cast<double>(t - started_ns_) / 1e9);
    std::string line = stats_.take_interval(t, t - last, measured_ ? "measured" : "warmup",
                                            offered);
    publisher_.publish(line);
    hooks_->dump_reset_stats();
    {
      std::lock_guard lock(lines_mutex_);
      lines_.push_back(std::move(line));
    }
    last = t;
    next += options_.interval_ns;
    if (last_round) return;
  }
}

std::string ServerCore::handle_command(const std::string& command) {
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
  stopping_ = true;
  if (monitor_.joinable()) monitor_.join();
  if (control_.joinable()) control_.join();
  if (control_fd_ >= 0) {
    close(control_fd_);
    unlink(options_.control_socket.c_str());
    control_fd_ = -1;
  }
}

}  // namespace pimcloud::harness::detail
