#include "pimcloud/harness/live_stats.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace pimcloud::harness {

IntervalStats::IntervalStats(std::string app, int workers)
    : app_(std::move(app)), slots_(static_cast<std::size_t>(workers)) {}

void IntervalStats::add(int worker, const RequestRecord& record) {
  Slot& slot = slots_.at(static_cast<std::size_t>(worker));
  std::lock_guard lock(slot.mutex);
  slot.sojourn_ns.push_back(record.sojourn_ns());
  slot.service_sum_ns += record.service_ns;
  slot.queue_sum_ns += record.queue_ns();
}

void IntervalStats::set_tids(std::vector<pid_t> tids) {
  std::lock_guard lock(meta_mutex_);
  tids_ = std::move(tids);
}

void IntervalStats::set_replicas(std::vector<int> nodes) {
  std::lock_guard lock(meta_mutex_);
  replicas_ = std::move(nodes);
}

namespace {
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

std::string IntervalStats::take_interval(std::uint64_t t_ns, std::uint64_t interval_ns,
                                         const char* phase, double offered_rps,
                                         const std::string& profile, double* rps_out) {
  std::vector<std::uint64_t> all;
  std::uint64_t service_sum = 0, queue_sum = 0;
  std::string threads = "[";
  std::vector<pid_t> tids;
  std::vector<int> replicas;
  {
    std::lock_guard lock(meta_mutex_);
    tids = tids_;
    replicas = replicas_;
  }
  for (std::size_t w = 0; w < slots_.size(); ++w) {
    std::vector<std::uint64_t> mine;
    std::uint64_t svc = 0;
    {
      std::lock_guard lock(slots_[w].mutex);
      mine.swap(slots_[w].sojourn_ns);
      svc = slots_[w].service_sum_ns;
      service_sum += svc;
      queue_sum += slots_[w].queue_sum_ns;
      slots_[w].service_sum_ns = slots_[w].queue_sum_ns = 0;
    }
    std::uint64_t sum = 0;
    for (const auto v : mine) sum += v;
    if (w) threads += ',';
    threads += "{\"worker\":" + std::to_string(w) +
               ",\"tid\":" + std::to_string(w < tids.size() ? tids[w] : 0) +
               ",\"count\":" + std::to_string(mine.size()) +
               ",\"mean_ns\":" + std::to_string(mine.empty() ? 0 : sum / mine.size()) +
               ",\"p99_ns\":" + std::to_string(quantile(mine, 0.99)) +
               ",\"busy_ns\":" + std::to_string(svc) + "}";
    all.insert(all.end(), mine.begin(), mine.end());
  }
  threads += ']';
  std::uint64_t sum = 0;
  for (const auto v : all) sum += v;
  const std::size_t n = all.size();
  const double rps = interval_ns ? static_cast<double>(n) * 1e9 / static_cast<double>(interval_ns)
                                 : 0.0;
  if (rps_out) *rps_out = rps;
  std::string tid_list = "[";
  for (std::size_t i = 0; i < tids.size(); ++i) {
    tid_list += (i ? "," : "") + std::to_string(tids[i]);
  }
  tid_list += ']';
  std::string replica_list = "[";
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    replica_list += (i ? "," : "") + std::to_string(replicas[i]);
  }
  replica_list += ']';
  char rps_text[64], offered_text[64];
  std::snprintf(rps_text, sizeof rps_text, "%.3f", rps);
  std::snprintf(offered_text, sizeof offered_text, "%.3f", offered_rps);
  return "{\"app\":" + json_string(app_) + ",\"pid\":" + std::to_string(getpid()) +
         ",\"seq\":" + std::to_string(seq_++) + ",\"t_ns\":" + std::to_string(t_ns) +
         ",\"interval_ns\":" + std::to_string(interval_ns) + ",\"phase\":" + json_string(phase) +
         ",\"count\":" + std::to_string(n) + ",\"rps\":" + rps_text +
         ",\"offered_rps\":" + offered_text + ",\"p50_ns\":" + std::to_string(quantile(all, 0.5)) +
         ",\"p99_ns\":" + std::to_string(quantile(all, 0.99)) +
         ",\"mean_ns\":" + std::to_string(n ? sum / n : 0) +
         ",\"max_ns\":" + std::to_string(quantile(all, 1.0)) +
         ",\"queue_mean_ns\":" + std::to_string(n ? queue_sum / n : 0) +
         ",\"service_mean_ns\":" + std::to_string(n ? service_sum / n : 0) +
         ",\"tids\":" + tid_list + ",\"replicas\":" + replica_list + ",\"threads\":" + threads +
         ",\"profile\":" + profile + "}";
}

StatsPublisher::StatsPublisher(std::string file_path, std::string socket_path)
    : socket_path_(std::move(socket_path)) {
  if (!file_path.empty()) {
    file_fd_ = open(file_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (file_fd_ < 0) {
      throw std::runtime_error("--stats-file " + file_path + ": " + std::strerror(errno) +
                               " (give a path in a writable folder)");
    }
  }
  if (!socket_path_.empty()) {
    if (socket_path_.size() >= sizeof(sockaddr_un::sun_path)) {
      throw std::runtime_error("--stats-socket " + socket_path_ +
                               ": path too long for a UNIX socket (keep it under 108 bytes)");
    }
    socket_fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (socket_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  }
}

StatsPublisher::~StatsPublisher() {
  if (file_fd_ >= 0) close(file_fd_);
  if (socket_fd_ >= 0) close(socket_fd_);
}

void StatsPublisher::publish(const std::string& line) {
  if (file_fd_ >= 0) {
    const std::string with_newline = line + '\n';
    // One write with O_APPEND: a reader never sees half a line from another writer.
    if (write(file_fd_, with_newline.data(), with_newline.size()) < 0) ++dropped_;
  }
  if (socket_fd_ >= 0) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size());
    if (sendto(socket_fd_, line.data(), line.size(), 0, reinterpret_cast<sockaddr*>(&addr),
               sizeof addr) < 0) {
      ++dropped_;  // no reader yet, or its queue is full
    }
  }
}

}  // namespace pimcloud::harness
