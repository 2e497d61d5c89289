#include "pimcloud/harness/runner.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "pimcloud/harness/clock.h"
#include "pimcloud/harness/sim_hooks.h"
#include "server_core.h"
#include "tcp.h"

namespace pimcloud::harness {

std::string ServiceArgs::option(const std::string& key, const std::string& fallback) const {
  const auto it = options.find(key);
  return it == options.end() ? fallback : it->second;
}

long long ServiceArgs::option_int(const std::string& key, long long fallback) const {
  const auto it = options.find(key);
  if (it == options.end()) return fallback;
  try {
    return std::stoll(it->second);
  } catch (const std::logic_error&) {
    throw std::invalid_argument("--opt " + key + "=" + it->second + ": expected an integer");
  }
}

namespace {

constexpr const char* kImageDataDir = "/opt/pimcloud/workload-data";  // workloads/image_data.py
std::atomic<bool> g_interrupted{false};
extern "C" void on_signal(int) { g_interrupted = true; }

double to_double(const std::string& flag, const std::string& value) {
  try {
    std::size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size() && v >= 0) return v;
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument(flag + " " + value + ": expected a number >= 0");
}

long long to_int(const std::string& flag, const std::string& value) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size() && v >= 0) return v;
  } catch (const std::logic_error&) {
  }
  throw std::invalid_argument(flag + " " + value + ": expected an integer >= 0");
}

// Plans arrivals and hands each request to `submit` at its scheduled time. Returns the
// number generated; `measured_ns` gets the span of the measured region's arrivals, and
// `cpu` (if given) the process's CPU time when that region began and the generator's own
// CPU time over it, less what its sleeps until an arrival cost (a light load's timer and
// wake-up, gone once it falls behind: the figure is what bounds the load it can offer).
struct MeasuredCpu {
  std::uint64_t process_at_start = 0;
  std::uint64_t generator_ns = 0;
};

template <typename Submit>
std::uint64_t generate(Service& service, const HarnessOptions& o, Submit submit,
                       std::uint64_t& measured_ns, EarlyStop* early = nullptr,
                       MeasuredCpu* cpu = nullptr) {
  ArrivalProcess arrivals(o.schedule, o.seed);
  Rng content(o.seed * 0x9E3779B97F4A7C15ULL + 1);  // request contents: own stream
  precise_sleeps();  // best effort: without it arrivals are late by the timer slack
  const std::uint64_t t0 = now_ns() + 1'000'000;
  std::uint64_t id = 0, first_measured = 0, last = 0, generator_at_start = 0, slept_cpu = 0;
  while (!g_interrupted) {
    const std::uint64_t offset = arrivals.next();
    if (offset == UINT64_MAX) break;
    const std::uint64_t scheduled = t0 + offset;
    if (static_cast<long long>(id) >= o.warmup) {
      const auto k = static_cast<long long>(id) - o.warmup;
      if (k == 0) {
        first_measured = scheduled;
        if (cpu) {
          cpu->process_at_start = process_cpu_ns();
          generator_at_start = thread_cpu_ns();
        }
      }
      if (o.requests > 0 && k >= o.requests) break;
      if (o.requests == 0 &&
          static_cast<double>(scheduled - first_measured) >= o.seconds * 1e9) {
        break;
      }
      if (early && early->enabled()) {
        if ((k & 15) == 0) {
          const std::uint64_t before = now_ns();
          const EarlyVerdict verdict = early->check(before);
          early->checked(now_ns() - before);
          if (verdict != EarlyVerdict::kUndecided) break;
        }
        early->arrival(scheduled);
      }
      last = scheduled;
    }
    Request request = detail::make_request_locked(service, content);
    if (now_ns() < scheduled) {
      const std::uint64_t before = generator_at_start ? thread_cpu_ns() : 0;
      sleep_until_ns(scheduled);
      if (generator_at_start) slept_cpu += thread_cpu_ns() - before;
    }
    submit(id, scheduled, std::move(request));
    ++id;
  }
  measured_ns = last > first_measured ? last - first_measured : 0;
  if (cpu && generator_at_start) {
    cpu->generator_ns = thread_cpu_ns() - generator_at_start - slept_cpu;
  }
  return id;
}

}  // namespace

// Room for the measured region's arrivals, made before it starts: its request count, or
// its length at the schedule's highest rate (the region starts after the warm-up, at a
// step not known beforehand), with room for Poisson's spread. Capped: beyond the room the
// list grows as it goes.
std::size_t expected_measured_arrivals(const HarnessOptions& o) {
  constexpr double kCap = 1 << 22;
  if (o.requests > 0) return static_cast<std::size_t>(std::min(double(o.requests), kCap));
  double peak = 0;
  for (const RateStep& step : o.schedule.steps()) peak = std::max(peak, step.rps);
  const double expected = peak * o.seconds * 1.25 + 64;
  return static_cast<std::size_t>(std::isfinite(expected) ? std::min(expected, kCap) : kCap);
}

namespace {

std::string one_line(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\\') out += "\\\\";
    else out += c;
  }
  return out;
}

struct Checker {
  Checker(const HarnessOptions& options, Service& checked_service)
      : o(options), service(checked_service) {}
  const HarnessOptions& o;
  Service& service;
  std::atomic<std::uint64_t> checked{0}, failed{0};
  std::mutex answers_mutex;
  std::vector<std::string> answers;
  void operator()(std::uint64_t id, const Request& request, const Response& response) {
    if (o.check_every <= 0 || id % static_cast<std::uint64_t>(o.check_every) != 0) return;
    ++checked;
    const bool ok = service.check(request, response);
    if (!ok && failed++ < 5) std::cerr << o.app << ": request " << id << " got a wrong answer\n";
    if (o.log_answers) {
      std::lock_guard lock(answers_mutex);
      answers.push_back(std::to_string(id) + '\t' + (ok ? "ok" : "wrong") + '\t' +
                        one_line(request.body) + '\t' + one_line(response.body));
    }
  }
};

RunResult run_integrated(Service& service, const HarnessOptions& o) {
  detail::ServerCore core(service, o);
  core.start();
  std::vector<std::vector<RequestRecord>> kept(static_cast<std::size_t>(o.threads));
  Checker checker(o, service);
  RunResult result;
  EarlyStop early(o.early_stop, expected_measured_arrivals(o));
  MeasuredCpu cpu;
  result.generated = generate(
      service, o,
      [&](std::uint64_t id, std::uint64_t scheduled, Request&& request) {
        core.queue().push({id, scheduled, std::move(request),
                           [&, id](int w, const RequestRecord& rec, Response&& resp,
                                   Request&& req) {
                             if (static_cast<long long>(id) >= o.warmup) {
                               kept[static_cast<std::size_t>(w)].push_back(rec);
                               early.answered(rec.sojourn_ns());
                             }
                             checker(id, req, resp);
                           }});
      },
      result.measured_ns, &early, &cpu);
  // A certain miss: the requests still waiting are late already; serving them would
  // only cost (simulated) time.
  const std::size_t discarded =
      early.verdict() == EarlyVerdict::kMiss ? core.queue().discard() : 0;
  core.finish();
  if (cpu.process_at_start) result.measured_cpu_ns = process_cpu_ns() - cpu.process_at_start;
  result.generator_cpu_ns = cpu.generator_ns;
  if (early.enabled()) result.early_stop = early.json(discarded);
  for (auto& k : kept) result.records.insert(result.records.end(), k.begin(), k.end());
  result.checked = checker.checked;
  result.failed = checker.failed;
  result.answers = std::move(checker.answers);
  result.live_lines = core.live_lines();
  result.profiles = core.profile_results();
  return result;
}

// Serves the requests of one connection; returns when the client has closed its side and
// every answer was sent.
void serve_connection(detail::ServerCore& core, int fd) {
  std::mutex write_mutex;
  detail::RequestFrame frame;
  while (detail::recv_request(fd, frame)) {
    core.queue().push({frame.id, frame.scheduled_ns, Request{std::move(frame.body)},
                       [&, id = frame.id](int w, const RequestRecord& rec, Response&& resp,
                                          Request&&) {
                         detail::ResponseFrame out{id, rec.start_ns, rec.end_ns,
                                                   rec.service_ns,
                                                   static_cast<std::uint32_t>(w),
                                                   std::move(resp.body)};
                         std::lock_guard lock(write_mutex);
                         detail::send_response(fd, out);
                       }});
  }
  core.finish();  // drains the queue: every answer is out before we close
  close(fd);
}

RunResult run_client(Service& service, const HarnessOptions& o, int port) {
  const int fd = detail::connect_tcp(o.host, port);
  std::mutex pending_mutex;
  std::map<std::uint64_t, std::pair<std::uint64_t, Request>> pending;  // id -> (scheduled, req)
  Checker checker(o, service);
  RunResult result;
  std::thread receiver([&] {
    detail::ResponseFrame frame;
    while (detail::recv_response(fd, frame)) {
      const std::uint64_t received = now_ns();
      std::pair<std::uint64_t, Request> sent;
      {
        std::lock_guard lock(pending_mutex);
        auto it = pending.find(frame.id);
        if (it == pending.end()) continue;
        sent = std::move(it->second);
        pending.erase(it);
      }
      // The client's view: the request is done when its answer is back.
      RequestRecord rec{frame.id, frame.worker, sent.first, frame.start_ns, received,
                        frame.service_ns};
      if (static_cast<long long>(frame.id) >= o.warmup) result.records.push_back(rec);
      checker(frame.id, sent.second, Response{std::move(frame.body)});
    }
  });
  result.generated = generate(
      service, o,
      [&](std::uint64_t id, std::uint64_t scheduled, Request&& request) {
        detail::RequestFrame frame{id, scheduled, request.body};
        {
          std::lock_guard lock(pending_mutex);
          pending.emplace(id, std::make_pair(scheduled, std::move(request)));
        }
        if (!detail::send_request(fd, frame)) {
          throw std::runtime_error("the server closed the connection");
        }
      },
      result.measured_ns);
  shutdown(fd, SHUT_WR);  // the server answers what it has, then closes
  receiver.join();
  close(fd);
  if (!pending.empty()) {
    std::cerr << o.app << ": " << pending.size() << " requests got no answer\n";
    result.failed += pending.size();
  }
  result.checked += checker.checked;
  result.failed += checker.failed;
  result.answers = std::move(checker.answers);
  return result;
}

// The scenario learns that this app's requests are all done (in gem5 it then leaves the
// detailed cores for the wrap-up: outputs, checks). Non-blocking: with no reader on a
// FIFO there is nobody to tell.
void announce_done(const std::string& app, const HarnessOptions& o) {
  if (o.done_file.empty()) return;
  const int fd = ::open(o.done_file.c_str(), O_WRONLY | O_NONBLOCK | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  const std::string line = app + " " + std::to_string(getpid()) + "\n";
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace

RunResult run(Service& service, const HarnessOptions& o) {
  RunResult result;
  if (o.mode == "integrated") {
    result = run_integrated(service, o);
  } else if (o.mode == "tcp") {
    int port = 0;
    const int listener = detail::listen_tcp(o.host, port);
    detail::ServerCore core(service, o);
    core.start();
    std::thread server([&] {
      const int fd = accept(listener, nullptr, nullptr);
      if (fd >= 0) serve_connection(core, fd);
    });
    try {
      result = run_client(service, o, port);
    } catch (...) {
      shutdown(listener, SHUT_RDWR);
      server.join();
      close(listener);
      throw;
    }
    server.join();
    close(listener);
    result.live_lines = core.live_lines();
    result.profiles = core.profile_results();
  } else if (o.mode == "client") {
    if (o.port <= 0) throw std::invalid_argument("--mode client needs --port of the server");
    result = run_client(service, o, o.port);
  } else {
    throw std::invalid_argument("--mode " + o.mode + ": use integrated, tcp, server or client");
  }
  std::sort(result.records.begin(), result.records.end(),
            [](const RequestRecord& a, const RequestRecord& b) {
              return a.request_id < b.request_id;
            });
  // Every request is answered: the service's end-of-run check (kvstore reads every key)
  // is no measurement, and in gem5 it runs on the atomic cores once this is announced.
  announce_done(o.app, o);
  result.service_summary = service.finish();
  return result;
}

void run_server(Service& service, const HarnessOptions& o) {
  int port = o.port;
  const int listener = detail::listen_tcp(o.host, port);
  std::cout << "listening on " << o.host << ":" << port << std::endl;
  detail::ServerCore core(service, o);
  core.start();
  const int fd = accept(listener, nullptr, nullptr);
  close(listener);
  if (fd < 0) throw std::runtime_error("accept failed");
  serve_connection(core, fd);
}

std::string summary_json(const HarnessOptions& o, const RunResult& r) {
  std::vector<std::uint64_t> sojourn, service, queue;
  std::uint64_t sum = 0;
  for (const auto& rec : r.records) {
    sojourn.push_back(rec.sojourn_ns());
    service.push_back(rec.service_ns);
    queue.push_back(rec.queue_ns());
    sum += rec.sojourn_ns();
  }
  const double seconds = static_cast<double>(r.measured_ns) / 1e9;
  char rps[64];
  std::snprintf(rps, sizeof rps, "%.3f",
                seconds > 0 ? static_cast<double>(r.records.size()) / seconds : 0.0);
  std::string schedule = "[";
  for (std::size_t i = 0; i < o.schedule.steps().size(); ++i) {
    const auto& s = o.schedule.steps()[i];
    char step[96];
    std::snprintf(step, sizeof step, "%s[%.6g,%.6g]", i ? "," : "", s.start_s, s.rps);
    schedule += step;
  }
  schedule += "]";
  std::string profiles = "[";
  for (std::size_t i = 0; i < r.profiles.size(); ++i) profiles += (i ? "," : "") + r.profiles[i];
  profiles += "]";
  return "{\"app\":\"" + o.app + "\",\"mode\":\"" + o.mode +
         "\",\"threads\":" + std::to_string(o.threads) + ",\"seed\":" + std::to_string(o.seed) +
         ",\"warmup\":" + std::to_string(o.warmup) +
         ",\"prewarm\":" + std::to_string(o.prewarm) + ",\"schedule\":" + schedule +
         ",\"generated\":" + std::to_string(r.generated) +
         ",\"requests\":" + std::to_string(r.records.size()) +
         ",\"measured_ns\":" + std::to_string(r.measured_ns) + ",\"achieved_rps\":" + rps +
         ",\"measured_cpu_ns\":" + std::to_string(r.measured_cpu_ns) +
         ",\"generator_cpu_ns\":" + std::to_string(r.generator_cpu_ns) +
         ",\"checked\":" + std::to_string(r.checked) + ",\"failed\":" + std::to_string(r.failed) +
         ",\"sojourn_p50_ns\":" + std::to_string(quantile(sojourn, 0.5)) +
         ",\"sojourn_p95_ns\":" + std::to_string(quantile(sojourn, 0.95)) +
         ",\"sojourn_p99_ns\":" + std::to_string(quantile(sojourn, 0.99)) +
         ",\"sojourn_max_ns\":" + std::to_string(quantile(sojourn, 1.0)) +
         ",\"sojourn_mean_ns\":" + std::to_string(sojourn.empty() ? 0 : sum / sojourn.size()) +
         ",\"service_p50_ns\":" + std::to_string(quantile(service, 0.5)) +
         ",\"service_p99_ns\":" + std::to_string(quantile(service, 0.99)) +
         ",\"queue_p99_ns\":" + std::to_string(quantile(queue, 0.99)) +
         ",\"m5ops\":" + (m5ops_available() ? "true" : "false") +
         ",\"profiles\":" + profiles +
         (r.early_stop.empty() ? std::string() : ",\"early_stop\":" + r.early_stop) +
         ",\"service\":" + r.service_summary + "}\n";
}

void write_outputs(const HarnessOptions& o, const RunResult& r) {
  if (o.out_dir.empty()) return;
  std::filesystem::create_directories(o.out_dir);
  write_lats_bin(o.out_dir + "/lats.bin", r.records);
  write_requests_csv(o.out_dir + "/requests.csv", r.records);
  std::string live;
  for (const auto& line : r.live_lines) live += line + '\n';
  atomic_write(o.out_dir + "/live.jsonl", live);
  if (o.log_answers) {
    std::vector<std::string> sorted = r.answers;
    std::sort(sorted.begin(), sorted.end(), [](const std::string& a, const std::string& b) {
      return std::stoull(a) < std::stoull(b);
    });
    std::string text = "request_id\tverdict\trequest\tresponse\n";
    for (const auto& line : sorted) text += line + '\n';
    atomic_write(o.out_dir + "/answers.tsv", text);
  }
  atomic_write(o.out_dir + "/summary.json", summary_json(o, r));
}

std::string usage(const std::string& app) {
  return "usage: pimcloud-" + app + R"( [options]
  --mode integrated|tcp|server|client   (integrated: one process, as the paper)
  --rps R | --schedule S:R,S:R,...      target load (Poisson), steps from run start
  --seconds S | --requests N            measured region (after warm-up)
  --warmup N        requests before the measured region (200)
  --threads N       server workers (20)
  --seed N          arrival and request seed (1)
  --out DIR         lats.bin, requests.csv, live.jsonl, summary.json
  --stats-file F    append live statistics (one JSON line per interval)
  --stats-socket P  send them as UNIX datagrams to P
  --interval-ms M   monitoring interval (100)
  --tids-file F     worker thread ids, as JSON, once the workers run
  --control-socket P  accept 'replicate NODE' / 'drop NODE' datagrams on P
  --control-file F  answer the agent's profile requests for this app in F (JSON lines):
                    saturate closed-loop on the given CPU for the asked duration
  --check-every N   check every Nth answer (0 = never)
  --log-answers     write the checked answers to answers.tsv in --out
  --gem5            bracket requests with m5 work_begin/work_end, dump stats each interval
  --gem5-work-type N  gem5 work item type of this service's requests (0; below 16)
  --early-stop-qos-ms Q  end the measured region once p99 > Q ms is certain (integrated)
  --early-stop-confidence C  one-sided confidence of that (0.99)
  --early-stop-min-requests N  decided requests before any verdict (100)
  --early-stop-meet  also end it once p99 <= Q ms is certain
  --done-file F     write one line to F (a FIFO the scenario reads, or a file) as soon
                    as the measured region's last request is done, before the outputs
  --ready-file F    create F once the service has loaded its data
  --prewarm N       serve N requests (their own random stream) on the workers before
                    that: a checkpoint made at the ready file then holds a warm service
  --start-file F    then wait for F to exist before generating any load; F may hold
                    the run's own options (load, lengths, seed, outputs, statistics,
                    hooks), which then replace those given at launch
  --host H --port P TCP modes
  --data DIR        the data sets ($PIMCLOUD_WORKLOAD_DATA, else /opt/pimcloud/workload-data)
  --opt KEY=VALUE   a service option (repeatable)
)";
}

HarnessOptions parse_options(const std::string& app, const std::vector<std::string>& args) {
  HarnessOptions o;
  o.app = app;
  // --data defaults to $PIMCLOUD_WORKLOAD_DATA, else the guest image's data sets.
  if (const char* env = std::getenv("PIMCLOUD_WORKLOAD_DATA"); env && *env) {
    o.service.data_dir = env;
  } else if (std::filesystem::is_directory(kImageDataDir)) {
    o.service.data_dir = kImageDataDir;
  }
  bool have_rps = false, have_schedule = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--mode") o.mode = value();
    else if (flag == "--rps") { o.schedule = LoadSchedule::constant(to_double(flag, value())); have_rps = true; }
    else if (flag == "--schedule") { o.schedule = LoadSchedule::parse(value()); have_schedule = true; }
    else if (flag == "--seconds") o.seconds = to_double(flag, value());
    else if (flag == "--requests") o.requests = to_int(flag, value());
    else if (flag == "--warmup") o.warmup = to_int(flag, value());
    else if (flag == "--threads") o.threads = static_cast<int>(to_int(flag, value()));
    else if (flag == "--seed") o.seed = static_cast<std::uint64_t>(to_int(flag, value()));
    else if (flag == "--out") o.out_dir = value();
    else if (flag == "--stats-file") o.stats_file = value();
    else if (flag == "--stats-socket") o.stats_socket = value();
    else if (flag == "--interval-ms") o.interval_ns = static_cast<std::uint64_t>(to_double(flag, value()) * 1e6);
    else if (flag == "--tids-file") o.tids_file = value();
    else if (flag == "--control-socket") o.control_socket = value();
    else if (flag == "--control-file") o.control_file = value();
    else if (flag == "--ready-file") o.ready_file = value();
    else if (flag == "--prewarm") o.prewarm = to_int(flag, value());
    else if (flag == "--start-file") o.start_file = value();
    else if (flag == "--done-file") o.done_file = value();
    else if (flag == "--check-every") o.check_every = to_int(flag, value());
    else if (flag == "--gem5") o.gem5 = true;
    else if (flag == "--gem5-work-type") {
      const std::string text = value();
      std::size_t used = 0;
      unsigned long long type = 0;
      try {
        type = std::stoull(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || text.empty() || text[0] == '-' || type >= kMaxWorkTypes) {
        throw std::invalid_argument("--gem5-work-type " + text + ": give a whole number below " +
                                    std::to_string(kMaxWorkTypes) +
                                    " (gem5's num_work_ids), one per service of a run");
      }
      o.gem5_work_type = type;
    }
    else if (flag == "--log-answers") o.log_answers = true;
    else if (flag == "--early-stop-qos-ms") o.early_stop.qos_ns = to_double(flag, value()) * 1e6;
    else if (flag == "--early-stop-confidence") o.early_stop.confidence = to_double(flag, value());
    else if (flag == "--early-stop-min-requests") o.early_stop.min_requests = to_int(flag, value());
    else if (flag == "--early-stop-meet") o.early_stop.stop_on_meet = true;
    else if (flag == "--host") o.host = value();
    else if (flag == "--port") o.port = static_cast<int>(to_int(flag, value()));
    else if (flag == "--data") o.service.data_dir = value();
    else if (flag == "--opt") {
      const std::string& kv = value();
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw std::invalid_argument("--opt " + kv + ": expected KEY=VALUE");
      }
      o.service.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else {
      throw std::invalid_argument("unknown option " + flag + " (see --help)");
    }
  }
  if (have_rps && have_schedule) {
    throw std::invalid_argument("give --rps or --schedule, not both");
  }
  if (o.threads < 1 || o.threads > 1024) {
    throw std::invalid_argument("--threads must be between 1 and 1024");
  }
  if (o.prewarm < 0) throw std::invalid_argument("--prewarm must be 0 or more requests");
  if (o.prewarm > 0 && o.mode == "client") {
    throw std::invalid_argument("--prewarm warms the serving side: give it to the server "
                                "(--mode server, integrated or tcp), not the client");
  }
  if (o.interval_ns < 1'000'000) throw std::invalid_argument("--interval-ms must be >= 1");
  // With a start file the measured region may come in it (with_start_options checks).
  if (o.mode != "server" && o.seconds <= 0 && o.requests <= 0 && o.start_file.empty()) {
    throw std::invalid_argument("give the measured region: --seconds S or --requests N");
  }
  if (o.mode != "integrated" && o.mode != "tcp" && o.mode != "server" && o.mode != "client") {
    throw std::invalid_argument("--mode " + o.mode + ": use integrated, tcp, server or client");
  }
  if (o.early_stop.enabled() && o.mode != "integrated") {
    throw std::invalid_argument("--early-stop-qos-ms works in --mode integrated only");
  }
  if (o.early_stop.enabled() &&
      (o.early_stop.confidence <= 0.5 || o.early_stop.confidence >= 1)) {
    throw std::invalid_argument("--early-stop-confidence must be between 0.5 and 1");
  }
  o.service.workers = o.threads;
  return o;
}

// The manager learns of an app's normal end from this line, the interval it happens
// (a killed app sends none; the agent then sees its process gone).
void announce_exit(const std::string& app, const HarnessOptions& o) {
  if (o.stats_file.empty() && o.stats_socket.empty()) return;
  StatsPublisher publisher(o.stats_file, o.stats_socket);
  publisher.publish("{\"event\":\"exit\",\"app\":\"" + app + "\",\"pid\":" +
                    std::to_string(getpid()) + ",\"t_ns\":" + std::to_string(now_ns()) + "}");
}

long long prewarm(Service& service, const HarnessOptions& o) {
  if (o.prewarm <= 0) return 0;
  Rng rng(o.seed * 0xA0761D6478BD642FULL + 3);  // apart from the generator's streams
  std::vector<Request> requests;
  requests.reserve(static_cast<std::size_t>(o.prewarm));
  for (long long i = 0; i < o.prewarm; ++i) requests.push_back(service.make_request(rng));
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::string error;
  auto fail = [&](const std::string& what) {
    std::lock_guard lock(error_mutex);
    if (error.empty()) error = what;
    next = requests.size();  // the others stop too
  };
  std::vector<std::thread> workers;
  try {
    for (int w = 0; w < o.threads; ++w) {
      workers.emplace_back([&, w] {
        try {
          for (std::size_t i = next++; i < requests.size(); i = next++) {
            service.serve(requests[i], w);
          }
        } catch (const std::exception& e) {
          fail(e.what());
        } catch (...) {  // an engine's own error type (Xapian's is no std::exception)
          fail("an exception that is not a std::exception");
        }
      });
    }
  } catch (...) {  // a thread could not be made: stop and join the ones that were
    next = requests.size();
    for (auto& w : workers) w.join();
    throw;
  }
  for (auto& w : workers) w.join();
  if (!error.empty()) throw std::runtime_error("--prewarm: a request failed: " + error);
  return o.prewarm;
}

bool wait_for_start(const HarnessOptions& o) {
  if (!o.ready_file.empty()) atomic_write(o.ready_file, std::to_string(getpid()) + "\n");
  if (o.start_file.empty()) return true;
  while (!std::filesystem::exists(o.start_file)) {
    if (g_interrupted) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool is_run_option(const std::string& flag) {
  static const std::set<std::string> run_options = {
      "--rps", "--schedule", "--seconds", "--requests", "--warmup", "--seed", "--out",
      "--stats-file", "--stats-socket", "--interval-ms", "--tids-file", "--control-socket",
      "--control-file", "--check-every", "--log-answers", "--gem5", "--gem5-work-type",
      "--early-stop-qos-ms", "--early-stop-confidence", "--early-stop-min-requests",
      "--early-stop-meet", "--done-file"};
  return run_options.count(flag) > 0;
}

HarnessOptions with_start_options(const std::string& app, const std::vector<std::string>& launch,
                                  const std::string& start_text) {
  std::vector<std::string> given;
  std::istringstream words(start_text);
  for (std::string word; words >> word;) given.push_back(word);
  bool sets_load = false;
  for (const auto& word : given) {
    if (word.rfind("--", 0) != 0) continue;
    if (!is_run_option(word)) {
      throw std::invalid_argument(
          "start file: " + word + " shapes the loaded service; give it when the service is "
          "launched, not in the start file");
    }
    sets_load = sets_load || word == "--rps" || word == "--schedule";
  }
  std::vector<std::string> args;
  for (std::size_t i = 0; i < launch.size(); ++i) {
    if (sets_load && (launch[i] == "--rps" || launch[i] == "--schedule")) {
      ++i;  // and its value
      continue;
    }
    args.push_back(launch[i]);
  }
  args.insert(args.end(), given.begin(), given.end());
  HarnessOptions o = parse_options(app, args);
  if (o.mode != "server" && o.seconds <= 0 && o.requests <= 0) {
    throw std::invalid_argument("give the measured region: --seconds S or --requests N, "
                                "at launch or in the start file");
  }
  return o;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

int harness_main(const std::string& app, ServiceFactory factory, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    std::cout << usage(app);
    return 0;
  }
  HarnessOptions options;
  try {
    options = parse_options(app, args);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pimcloud-" << app << ": " << e.what() << '\n';
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    auto service = factory(options.service);
    // A service that serves is started (and warmed) before it reports ready, so that a
    // checkpoint made then holds its engine handles, not a restored run's first moments.
    const bool serves = options.mode != "client";
    if (serves) {
      service->start(options.threads);
      prewarm(*service, options);
    }
    if (!wait_for_start(options)) {
      std::cerr << "pimcloud-" << app << ": interrupted while waiting for "
                << options.start_file << '\n';
      return 1;
    }
    if (!options.start_file.empty()) {
      try {
        options = with_start_options(app, args, read_text(options.start_file));
      } catch (const std::invalid_argument& e) {
        std::cerr << "pimcloud-" << app << ": " << options.start_file << ": " << e.what()
                  << '\n';
        return 2;
      }
    }
    options.service_started = serves;
    if (options.mode == "server") {
      run_server(*service, options);
      std::cout << service->finish() << std::endl;
      return 0;
    }
    const RunResult result = run(*service, options);
    // The app's service ends here: the manager may recycle its cores while it writes.
    announce_exit(app, options);
    write_outputs(options, result);
    std::cout << summary_json(options, result);
    return result.failed ? 3 : 0;
  } catch (const std::exception& e) {
    std::cerr << "pimcloud-" << app << ": " << e.what() << '\n';
    return 1;
  }
}

}  // namespace pimcloud::harness
