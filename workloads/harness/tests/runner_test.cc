#include "pimcloud/harness/runner.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "pimcloud/harness/synthetic_service.h"

using namespace pimcloud::harness;

namespace {
HarnessOptions options(const std::string& mode) {
  HarnessOptions o = parse_options(
      "synthetic", {"--mode", mode, "--rps", "2000", "--requests", "600", "--warmup", "50",
                    "--threads", "4", "--check-every", "1", "--interval-ms", "20"});
  o.service.options["work_us"] = "20";
  return o;
}

void expect_complete(const RunResult& r, const HarnessOptions& o) {
  ASSERT_EQ(r.records.size(), 600u);
  EXPECT_EQ(r.generated, 650u);
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    const auto& rec = r.records[i];
    EXPECT_EQ(rec.request_id, 50 + i);
    EXPECT_GE(rec.start_ns, rec.scheduled_ns);
    EXPECT_GE(rec.end_ns, rec.start_ns);
    EXPECT_GE(rec.sojourn_ns(), rec.service_ns);
    EXPECT_LT(rec.thread, static_cast<std::uint32_t>(o.threads));
  }
  EXPECT_EQ(r.checked, 650u);
  EXPECT_EQ(r.failed, 0u);
}
}  // namespace

TEST(Runner, IntegratedModeRecordsEveryMeasuredRequest) {
  const auto o = options("integrated");
  SyntheticService service(o.service);
  const RunResult r = run(service, o);
  expect_complete(r, o);
  for (const auto& rec : r.records) {
    EXPECT_EQ(rec.queue_ns() + rec.service_ns, rec.sojourn_ns());
    // Released into the queue after its scheduled arrival (the generator sleeps until
    // then) and before a worker took it.
    EXPECT_GE(rec.released_ns, rec.scheduled_ns);
    EXPECT_LE(rec.released_ns, rec.start_ns);
  }
  ASSERT_FALSE(r.live_lines.empty());
  EXPECT_NE(r.live_lines.back().find("\"phase\":\"measured\""), std::string::npos);
  std::uint64_t live_count = 0;
  for (const auto& line : r.live_lines) {
    const auto at = line.find("\"count\":");
    live_count += std::stoull(line.substr(at + 8));
  }
  EXPECT_EQ(live_count, 650u);  // every completion is in exactly one interval
}

TEST(Runner, TheLoadGeneratorSleepsWithoutTimerSlack) {
  // The generator runs on the calling thread, here one with Linux's default slack (50 us;
  // set explicitly, as threads inherit their creator's), which would make every arrival
  // late by up to that much.
  long slack_before = -1, slack_after = -1;
  std::thread generator([&] {
    prctl(PR_SET_TIMERSLACK, 50'000UL, 0UL, 0UL, 0UL);
    slack_before = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    const auto o = options("integrated");
    SyntheticService service(o.service);
    run(service, o);
    slack_after = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  });
  generator.join();
  EXPECT_EQ(slack_before, 50'000);
  EXPECT_EQ(slack_after, 1);
}

TEST(Runner, LoopbackTcpModeRecordsEveryMeasuredRequest) {
  const auto o = options("tcp");
  SyntheticService service(o.service);
  const RunResult r = run(service, o);
  expect_complete(r, o);
  // The client's records: the server's release into its queue is not in the frames.
  for (const auto& rec : r.records) EXPECT_EQ(rec.released_ns, 0u);
}

TEST(Runner, SojournCountsQueueingFromTheScheduledArrival) {
  // One worker far over capacity: queueing must show in sojourn although each request's
  // service time stays small (no coordinated omission).
  auto o = parse_options("synthetic", {"--rps", "20000", "--requests", "400", "--warmup", "0",
                                       "--threads", "1"});
  o.service.options["work_us"] = "200";
  o.service.options["dist"] = "fixed";
  SyntheticService service(o.service);
  const RunResult r = run(service, o);
  std::vector<std::uint64_t> sojourn, svc;
  for (const auto& rec : r.records) {
    sojourn.push_back(rec.sojourn_ns());
    svc.push_back(rec.service_ns);
  }
  EXPECT_GT(quantile(sojourn, 0.99), 10 * quantile(svc, 0.99));
}

TEST(Runner, ALateGeneratorShowsBeforeTheReleaseNotAfterIt) {
  // Requests whose making takes longer than their spacing leave the generator behind its
  // schedule: the lateness lies between the scheduled arrival and the release into the
  // queue, while four workers at a light load take each one almost as it is released.
  auto o = parse_options("synthetic", {"--rps", "20000", "--requests", "200", "--warmup", "0",
                                       "--threads", "4"});
  o.service.options["work_us"] = "5";
  o.service.options["dist"] = "fixed";
  o.service.options["make_us"] = "200";
  SyntheticService service(o.service);
  const RunResult r = run(service, o);
  ASSERT_EQ(r.records.size(), 200u);
  std::vector<std::uint64_t> late, after;
  for (const auto& rec : r.records) {
    ASSERT_GE(rec.released_ns, rec.scheduled_ns);
    ASSERT_LE(rec.released_ns, rec.start_ns);
    late.push_back(rec.released_ns - rec.scheduled_ns);
    after.push_back(rec.start_ns - rec.released_ns);
  }
  EXPECT_GT(quantile(late, 0.5), 1'000'000u);  // 150 us behind a request, 200 requests
  EXPECT_LT(quantile(after, 0.5), quantile(late, 0.5) / 10);
}

TEST(Runner, TidsArePublishedAndDistinct) {
  auto o = options("integrated");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-run-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  o.tids_file = (dir / "tids.json").string();
  o.out_dir = (dir / "out").string();
  SyntheticService service(o.service);
  const RunResult r = run(service, o);
  write_outputs(o, r);
  const std::string line = r.live_lines.front();
  const auto at = line.find("\"tids\":[") + 8;
  const std::string list = line.substr(at, line.find(']', at) - at);
  std::set<long> tids;
  std::size_t pos = 0;
  while (pos < list.size()) {
    const auto comma = list.find(',', pos);
    tids.insert(std::stol(list.substr(pos, comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  EXPECT_EQ(tids.size(), 4u);
  EXPECT_EQ(tids.count(0), 0u);
  EXPECT_TRUE(std::filesystem::exists(dir / "tids.json"));
  EXPECT_EQ(std::filesystem::file_size(dir / "out" / "lats.bin"), 600u * 24u);
  EXPECT_EQ(read_lats_bin((dir / "out" / "lats.bin").string()).size(), 600u);
}

TEST(Runner, ControlSocketAnswersReplicationRequests) {
  auto o = parse_options("synthetic", {"--rps", "200", "--seconds", "0.6", "--warmup", "0",
                                       "--threads", "2"});
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-ctl-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  o.control_socket = (dir / "ctl").string();
  SyntheticService service(o.service);
  std::thread runner([&] { run(service, o); });
  const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un me{};
  me.sun_family = AF_UNIX;
  const std::string mine = (dir / "me").string();
  std::filesystem::remove(mine);
  std::strcpy(me.sun_path, mine.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&me), sizeof me), 0);
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_un to{};
  to.sun_family = AF_UNIX;
  std::strcpy(to.sun_path, o.control_socket.c_str());
  char reply[256] = {};
  for (int tries = 0; tries < 50; ++tries) {
    const std::string msg = "replicate 0";
    if (sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) >= 0) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(recv(fd, reply, sizeof reply - 1, 0), 0);
  // The synthetic service has no read-only data set: the refusal says so.
  EXPECT_NE(std::string(reply).find("no replicable"), std::string::npos) << reply;
  close(fd);
  runner.join();
}

// A service whose end-of-run check looks for the done line: in gem5 the scenario leaves
// the detailed cores on that line, so the check must come after it.
class CheckedAfterTheDoneLine final : public Service {
 public:
  CheckedAfterTheDoneLine(const ServiceArgs& c, std::string done) : inner_(c), done_(std::move(done)) {}
  void start(int workers) override { inner_.start(workers); }
  Request make_request(Rng& rng) override { return inner_.make_request(rng); }
  Response serve(const Request& r, int worker) override { return inner_.serve(r, worker); }
  bool check(const Request& r, const Response& a) override { return inner_.check(r, a); }
  std::string finish() override {
    std::ifstream in(done_);
    std::string line;
    announced = static_cast<bool>(std::getline(in, line)) && line.rfind("synthetic ", 0) == 0;
    return inner_.finish();
  }
  bool announced = false;

 private:
  SyntheticService inner_;
  std::string done_;
};

TEST(Runner, TheDoneLineComesBeforeTheServicesEndOfRunCheck) {
  auto o = options("integrated");
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-done-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  o.done_file = (dir / "done").string();
  o.control_socket = (dir / "ctl").string();  // finish() must not wait out its timeout
  CheckedAfterTheDoneLine service(o.service, o.done_file);
  const RunResult r = run(service, o);
  expect_complete(r, o);
  EXPECT_TRUE(service.announced);
  std::filesystem::remove_all(dir);
}

TEST(Runner, Gem5WorkTypeStaysBelowGem5sWorkIds) {
  const auto o = parse_options("x", {"--seconds", "1", "--gem5-work-type", "3"});
  EXPECT_EQ(o.gem5_work_type, 3u);
  EXPECT_EQ(parse_options("x", {"--seconds", "1"}).gem5_work_type, 0u);
  for (const char* bad : {"16", "-1", "2x", ""}) {
    try {
      parse_options("x", {"--seconds", "1", "--gem5-work-type", bad});
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("num_work_ids"), std::string::npos) << e.what();
    }
  }
}

TEST(Runner, BadOptionsAreNamed) {
  EXPECT_THROW(parse_options("x", {"--rps", "-3", "--seconds", "1"}), std::invalid_argument);
  EXPECT_THROW(parse_options("x", {"--rps", "10"}), std::invalid_argument);
  EXPECT_THROW(parse_options("x", {"--bogus"}), std::invalid_argument);
  EXPECT_THROW(parse_options("x", {"--mode", "udp", "--seconds", "1"}), std::invalid_argument);
  try {
    parse_options("x", {"--threads", "0", "--seconds", "1"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--threads"), std::string::npos);
  }
}

TEST(Runner, WaitsForTheStartFileAfterSayingItIsReady) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-start-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  HarnessOptions o = parse_options("x", {"--rps", "10", "--seconds", "1", "--ready-file",
                                         (dir / "ready").string(), "--start-file",
                                         (dir / "go").string()});
  std::atomic<bool> returned{false};
  std::thread waiter([&] { returned = wait_for_start(o); });
  for (int i = 0; i < 500 && !std::filesystem::exists(dir / "ready"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(std::filesystem::exists(dir / "ready"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned) << "returned before the start file existed";
  std::ofstream(dir / "go") << "";
  waiter.join();
  EXPECT_TRUE(returned);
  std::ifstream ready(dir / "ready");
  pid_t pid = 0;
  ready >> pid;
  EXPECT_EQ(pid, getpid());
  std::filesystem::remove_all(dir);
}

TEST(Runner, TheStartFileGivesTheRunsOwnOptions) {
  const std::vector<std::string> launch = {"--threads", "3", "--start-file", "/run/go",
                                           "--opt", "keys=100"};
  // Launched without a measured region: the start file brings it, with the load.
  const auto o = with_start_options(
      "x", launch, "--rps 2500 --seconds 0.5\n--warmup 40 --seed 9 --out /results/x --gem5\n");
  EXPECT_EQ(o.threads, 3);
  EXPECT_EQ(o.service.options.at("keys"), "100");
  EXPECT_DOUBLE_EQ(o.schedule.rps_at(0), 2500);
  EXPECT_DOUBLE_EQ(o.seconds, 0.5);
  EXPECT_EQ(o.warmup, 40);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.out_dir, "/results/x");
  EXPECT_TRUE(o.gem5);
  // Its load replaces the launch's, whichever form either takes.
  const auto replaced = with_start_options("x", {"--rps", "10", "--seconds", "1"},
                                           "--schedule 0:100,0.5:200");
  EXPECT_DOUBLE_EQ(replaced.schedule.rps_at(0.6), 200);
  // An empty start file keeps the launch's options.
  EXPECT_DOUBLE_EQ(with_start_options("x", {"--rps", "10", "--seconds", "1"}, "").seconds, 1);
  EXPECT_TRUE(is_run_option("--rps"));
  EXPECT_FALSE(is_run_option("--threads"));
}

TEST(Runner, TheStartFileCannotReshapeTheLoadedService) {
  for (const char* bad : {"--threads 8", "--opt keys=5", "--data /d", "--mode tcp"}) {
    try {
      with_start_options("x", {"--seconds", "1", "--start-file", "/go"}, bad);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("launched"), std::string::npos) << e.what();
    }
  }
  // No measured region at launch nor in the start file.
  EXPECT_THROW(with_start_options("x", {"--start-file", "/go"}, "--rps 5"),
               std::invalid_argument);
}

// Counts what the harness asks of it: a service started once, warmed on every worker.
class Counted final : public Service {
 public:
  explicit Counted(bool fail = false) : fail_(fail) {}
  void start(int workers) override {
    ++starts;
    served = std::vector<std::atomic<int>>(static_cast<std::size_t>(workers));
  }
  Request make_request(Rng& rng) override { return {std::to_string(rng() % 1000)}; }
  Response serve(const Request&, int worker) override {
    if (fail_) throw std::runtime_error("no such table");
    ++served[static_cast<std::size_t>(worker)];
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // every worker gets some
    return {"ok"};
  }
  bool check(const Request&, const Response&) override { return true; }
  int starts = 0;
  std::vector<std::atomic<int>> served;

 private:
  bool fail_;
};

TEST(Runner, PrewarmServesItsRequestsOnEveryWorkerOfTheStartedService) {
  HarnessOptions o = parse_options("x", {"--seconds", "1", "--threads", "3", "--prewarm",
                                         "30", "--rps", "2000", "--warmup", "0"});
  EXPECT_EQ(o.prewarm, 30);
  Counted service;
  service.start(o.threads);
  EXPECT_EQ(prewarm(service, o), 30);
  int total = 0;
  for (const auto& n : service.served) {
    EXPECT_GT(n.load(), 0) << "a worker was left cold";
    total += n;
  }
  EXPECT_EQ(total, 30);
  // A run after it serves on the same started service: no second start.
  o.service_started = true;
  o.seconds = 0.02;
  const RunResult r = run(service, o);
  EXPECT_EQ(service.starts, 1);
  EXPECT_FALSE(r.records.empty());
  // Without the flag the run starts the service itself, as before.
  EXPECT_EQ(prewarm(service, parse_options("x", {"--seconds", "1"})), 0);
}

TEST(Runner, APrewarmRequestThatFailsIsNamed) {
  const HarnessOptions o = parse_options("x", {"--seconds", "1", "--threads", "2",
                                               "--prewarm", "4"});
  Counted service(true);
  service.start(o.threads);
  try {
    prewarm(service, o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--prewarm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no such table"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_options("x", {"--seconds", "1", "--prewarm", "x"}), std::invalid_argument);
  EXPECT_THROW(parse_options("x", {"--mode", "client", "--port", "1", "--seconds", "1",
                                   "--prewarm", "5"}),
               std::invalid_argument);
}

TEST(Runner, ANegativeGeneratorCostIsNamed) {
  auto o = parse_options("synthetic", {"--rps", "100", "--requests", "1"});
  o.service.options["make_us"] = "-5";
  try {
    SyntheticService service(o.service);
    FAIL() << "a negative make_us was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("make_us=-5"), std::string::npos) << e.what();
  }
}
