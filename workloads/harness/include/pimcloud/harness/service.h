// The one request interface of the harness: a latency-critical service only says how to
// make a request, how to serve one, and how to check an answer (Tailbench's shape).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>

namespace pimcloud::harness {

using Rng = std::mt19937_64;

struct Request {
  std::string body;  // opaque to the harness; sent as-is in TCP mode
};

struct Response {
  std::string body;
  // Time this request held the service's serial section (SerialSection), 0 if none, and
  // the time it waited for it: a model of the service queues on the section itself, so it
  // takes the measured wait out of the service time.
  std::uint64_t serial_ns = 0;
  std::uint64_t serial_wait_ns = 0;
};

// A service's serial section: a lock that requests of some kinds hold in turn (SQLite's one
// writer). Held from construction to destruction; the hold time is added to the Response's
// serial_ns and the wait for the lock to its serial_wait_ns, so that a model of the
// service can queue requests on one such section as the service does (requests.csv,
// analysis/queueing.py).
class SerialSection {
 public:
  using Clock = std::chrono::steady_clock;

  SerialSection(std::mutex& lock, Response& response)
      : asked_(Clock::now()), guard_(lock), held_(Clock::now()), response_(response) {
    response_.serial_wait_ns += nanoseconds(held_ - asked_);
  }
  ~SerialSection() { response_.serial_ns += nanoseconds(Clock::now() - held_); }
  SerialSection(const SerialSection&) = delete;
  SerialSection& operator=(const SerialSection&) = delete;

 private:
  static std::uint64_t nanoseconds(Clock::duration d) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
  }

  Clock::time_point asked_;
  std::lock_guard<std::mutex> guard_;
  Clock::time_point held_;
  Response& response_;
};

// What a service is given at start: its data set and its own key=value options.
struct ServiceArgs {
  std::string data_dir;
  int workers = 20;
  std::map<std::string, std::string> options;

  // The option's value, or `fallback` when it was not given.
  std::string option(const std::string& key, const std::string& fallback) const;
  long long option_int(const std::string& key, long long fallback) const;
};

class Service {
 public:
  virtual ~Service() = default;

  // Called once before any request, with the number of server workers, so a service can
  // build one engine handle per worker when its engine is not thread-safe.
  virtual void start(int /*workers*/) {}

  // Load-generator side: a new request. Called from one thread only; keep it cheap.
  virtual Request make_request(Rng& rng) = 0;

  // Server side: serve one request on worker `worker` (0..workers-1); called concurrently.
  virtual Response serve(const Request& request, int worker) = 0;

  // Whether `response` is a correct answer to `request`. Called concurrently.
  virtual bool check(const Request& request, const Response& response) = 0;

  // A JSON object (text) about the run, written into summary.json (e.g. accuracy,
  // database consistency). Called after every worker stopped.
  virtual std::string finish() { return "{}"; }

  // Replication hook: keep a copy of the read-only data set on NUMA node `node`, so that
  // workers running on that node read it locally. Returns false if the service has no
  // replicable data or the copy failed (reason in `error`).
  virtual bool replicate(int /*node*/, std::string& error) {
    error = "this service has no replicable read-only data set";
    return false;
  }
  virtual bool drop_replica(int /*node*/, std::string& error) {
    error = "this service has no replicable read-only data set";
    return false;
  }
};

using ServiceFactory = std::unique_ptr<Service> (*)(const ServiceArgs&);

}  // namespace pimcloud::harness
