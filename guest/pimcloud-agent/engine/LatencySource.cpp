#include "engine/LatencySource.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace pimcloud {

using nlohmann::json;

FileLatencySource::~FileLatencySource() {
  if (fd_ >= 0) ::close(fd_);
}

bool parseLatencyLine(const std::string& line, std::uint64_t lineNo, LatencyBatch& batch) {
  if (line.find_first_not_of(" \t\r") == std::string::npos) return true;
  auto fail = [&](const std::string& why) {
    batch.errors.push_back("latency line " + std::to_string(lineNo) + ": " + why);
    return false;
  };
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  if (!j.contains("app") || !j["app"].is_string()) return fail("missing string field \"app\"");
  const std::string app = j["app"].get<std::string>();
  auto num = [&](const char* key) -> double {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  if (j.contains("event")) {
    const std::string ev = j["event"].is_string() ? j["event"].get<std::string>() : "";
    AppEvent e;
    e.app = app;
    if (ev == "start") {
      e.kind = AppEvent::Kind::Start;
      e.pid = static_cast<int>(num("pid"));
      e.spec.name = app;
      e.spec.qosNs = num("qos_ns");
      e.spec.maxRpsHost = num("max_rps_host");
      e.spec.maxRpsPim = num("max_rps_pim");
      e.spec.threads = static_cast<int>(num("threads"));
      if (e.spec.qosNs <= 0) return fail("start of \"" + app + "\" needs \"qos_ns\" > 0");
    } else if (ev == "exit") {
      e.kind = AppEvent::Kind::Exit;
    } else {
      return fail("unknown event \"" + ev + "\" (use \"start\" or \"exit\")");
    }
    batch.events.push_back(e);
    return true;
  }
  for (const char* key : {"t_ns", "p99_ns", "count"}) {
    if (!j.contains(key) || !j[key].is_number()) {
      return fail(std::string("missing number field \"") + key + "\"");
    }
  }
  IntervalStats s;
  s.tNs = static_cast<std::int64_t>(num("t_ns"));
  s.p99Ns = num("p99_ns");
  s.meanNs = num("mean_ns");
  s.count = static_cast<std::uint64_t>(num("count"));
  s.rps = num("rps");
  s.pid = static_cast<int>(num("pid"));
  s.intervalNs = static_cast<std::int64_t>(num("interval_ns"));
  if (j.contains("profile")) {
    // The request's t_ns is matched exactly: read it as an integer, not through a double.
    const json& p = j["profile"];
    s.marksProfiles = true;
    if (p.is_object() && p.contains("t_ns") && p["t_ns"].is_number_integer()) {
      ProfileMarker m;
      m.tNs = p["t_ns"].get<std::int64_t>();
      m.cpu = p.contains("cpu") && p["cpu"].is_number_integer() ? p["cpu"].get<int>() : -1;
      m.coreType = p.contains("core_type") && p["core_type"].is_string()
                       ? p["core_type"].get<std::string>()
                       : "";
      s.profile = m;
    } else if (!p.is_null()) {
      return fail("field \"profile\" must be null or an object with an integer \"t_ns\" "
                  "(the profile request, as workloads/harness publishes it)");
    }
  }
  if (j.contains("tids") && j["tids"].is_array()) {
    for (const auto& t : j["tids"]) {
      if (t.is_number_integer()) s.tids.push_back(t.get<int>());
    }
  }
  batch.add(app, s);
  return true;
}

LatencyBatch FileLatencySource::poll() {
  LatencyBatch batch;
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return batch;  // not published yet
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n > 0) {
      partial_.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EOF (regular file) or EAGAIN (FIFO)
  }
  std::size_t start = 0;
  for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
    parseLatencyLine(partial_.substr(start, nl - start), ++lineNo_, batch);
  }
  partial_.erase(0, start);
  return batch;
}

}  // namespace pimcloud

namespace pimcloud {

SocketLatencySource::SocketLatencySource(std::string path) : path_(std::move(path)) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) {
    error_ = path_ + ": socket path too long; keep it under 108 bytes";
    return;
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size());
  fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    error_ = path_ + ": socket: " + std::strerror(errno);
    return;
  }
  ::unlink(path_.c_str());
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error_ = path_ + ": bind: " + std::strerror(errno) + " (is the folder writable?)";
    ::close(fd_);
    fd_ = -1;
  }
}

SocketLatencySource::~SocketLatencySource() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

LatencyBatch SocketLatencySource::poll() {
  LatencyBatch batch;
  if (fd_ < 0) return batch;
  std::string buf(65536, '\0');
  for (;;) {
    const ssize_t n = ::recv(fd_, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::string msg = buf.substr(0, static_cast<std::size_t>(n));
    std::size_t start = 0;
    while (start <= msg.size()) {
      std::size_t nl = msg.find('\n', start);
      if (nl == std::string::npos) nl = msg.size();
      if (nl > start) parseLatencyLine(msg.substr(start, nl - start), ++lineNo_, batch);
      start = nl + 1;
    }
  }
  return batch;
}

std::unique_ptr<LatencySource> openLatencySource(const std::string& spec, std::string& error) {
  if (spec.rfind("unix:", 0) == 0) {
    auto s = std::make_unique<SocketLatencySource>(spec.substr(5));
    error = s->error();
    return s;
  }
  return std::make_unique<FileLatencySource>(spec);
}

}  // namespace pimcloud
