#include "pimcloud/harness/profiling.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "pimcloud/harness/clock.h"
#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/synthetic_service.h"

using namespace pimcloud::harness;

namespace {
std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void append(const std::filesystem::path& file, const std::string& text) {
  std::ofstream(file, std::ios::app) << text << std::flush;
}

double number_after(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\":");
  return at == std::string::npos ? -1 : std::stod(line.substr(at + key.size() + 3));
}
}  // namespace

TEST(Profiling, ReadsTheAgentsProfileLineForItsAppOnly) {
  // As the agent writes it (nlohmann::json::dump: keys in alphabetical order).
  const std::string line =
      R"({"app":"search","core_type":"pim","cpu":12,"duration_ms":500,"event":"profile",)"
      R"("t_ns":123456789})";
  std::string error;
  const auto r = parse_profile_request(line, "search", error);
  ASSERT_TRUE(r.has_value()) << error;
  EXPECT_EQ(r->core_type, "pim");
  EXPECT_EQ(r->cpu, 12);
  EXPECT_EQ(r->t_ns, 123456789u);
  EXPECT_EQ(r->duration_ns, 500'000'000u);
  EXPECT_EQ(r->end_ns(), 623456789u);
  EXPECT_EQ(r->json(), R"({"t_ns":123456789,"cpu":12,"core_type":"pim"})");

  EXPECT_FALSE(parse_profile_request(line, "kvstore", error).has_value());
  EXPECT_TRUE(error.empty());
  const std::string replicate = R"({"app":"search","event":"replicate","node":2,"t_ns":1})";
  EXPECT_FALSE(parse_profile_request(replicate, "search", error).has_value());
  EXPECT_TRUE(error.empty());
  EXPECT_FALSE(parse_profile_request("{not json", "search", error).has_value());
  EXPECT_EQ(error, "not a JSON object");
  EXPECT_FALSE(parse_profile_request(R"({"app":"search","event":"profile","t_ns":5})",
                                     "search", error));
  EXPECT_NE(error.find("duration_ms"), std::string::npos);
}

// The agent's replica requests (Engine::place, nlohmann::json::dump) as the control
// socket's commands; everything else is not one.
TEST(Profiling, PlacementCommandsFromTheAgentsControlLines) {
  const std::string replicate = R"({"app":"imgdnn","event":"replicate","node":1,"t_ns":7})";
  EXPECT_EQ(parse_placement_command(replicate, "imgdnn"), "replicate 1");
  EXPECT_EQ(parse_placement_command(R"({"app":"imgdnn","event":"drop-replicas","node":0,"t_ns":7})",
                                    "imgdnn"),
            "drop 0");
  EXPECT_FALSE(parse_placement_command(replicate, "search"));
  EXPECT_FALSE(parse_placement_command(
      R"({"app":"imgdnn","core_type":"pim","cpu":12,"duration_ms":500,"event":"profile","t_ns":1})",
      "imgdnn"));
  EXPECT_FALSE(parse_placement_command(R"({"app":"imgdnn","event":"replicate","node":-1})", "imgdnn"));
  EXPECT_FALSE(parse_placement_command(R"({"app":"imgdnn","event":"replicate"})", "imgdnn"));
  EXPECT_FALSE(parse_placement_command("{not json", "imgdnn"));
}

TEST(Profiling, ControlFileReaderWaitsForTheFileAndForWholeLines) {
  const auto dir = scratch("ctlfile");
  const auto file = dir / "control.jsonl";
  ControlFileReader reader(file.string());
  EXPECT_TRUE(reader.poll().empty());  // no file yet
  append(file, "{\"a\":1}\n{\"b\":");
  auto lines = reader.poll();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "{\"a\":1}");
  append(file, "2}\n");
  lines = reader.poll();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "{\"b\":2}");
  EXPECT_TRUE(reader.poll().empty());
}

TEST(Profiling, CorePinPinsAndRestoresOnlyWhatItChanged) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  const int cpu = sched_getcpu();
  {
    CorePin pin({static_cast<pid_t>(gettid())}, cpu);
    cpu_set_t now;
    sched_getaffinity(0, sizeof now, &now);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(cpu, &now));
    EXPECT_EQ(pin.pinned(), CPU_COUNT(&before) > 1 ? 1 : 0);
    // Already confined there: a second pin leaves it alone and has nothing to restore.
    CorePin again({static_cast<pid_t>(gettid())}, cpu);
    EXPECT_EQ(again.pinned(), 0);
  }
  cpu_set_t after;
  sched_getaffinity(0, sizeof after, &after);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(Profiling, AProfileRequestSaturatesTheAppForItsWindowOnly) {
  // Low offered load (40 RPS of 200 us requests); a 400 ms profile request arrives mid-run.
  // Inside the window the live statistics must show the core's capacity, far above the
  // offered load; the latency records keep only the load generator's requests.
  const auto dir = scratch("profile");
  const auto control = dir / "control.jsonl";
  auto o = parse_options("synthetic", {"--rps", "40", "--seconds", "1.6", "--warmup", "0",
                                       "--threads", "2", "--interval-ms", "50",
                                       "--control-file", control.string()});
  o.service.options["work_us"] = "200";
  o.service.options["dist"] = "fixed";
  // A request of an earlier run (its window is over) and one for another app: no answer.
  append(control, R"({"app":"synthetic","core_type":"host","cpu":0,"duration_ms":400,)"
                  R"("event":"profile","t_ns":1000})" "\n");
  append(control, R"({"app":"other","core_type":"host","cpu":0,"duration_ms":400,)"
                  R"("event":"profile","t_ns":)" + std::to_string(now_ns()) + "}\n");
  SyntheticService service(o.service);
  std::uint64_t asked = 0;
  std::thread agent([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    asked = now_ns();
    append(control, R"({"app":"synthetic","core_type":"host","cpu":)" +
                        std::to_string(sched_getcpu()) +
                        R"(,"duration_ms":400,"event":"profile","t_ns":)" +
                        std::to_string(asked) + "}\n");
  });
  const RunResult r = run(service, o);
  agent.join();

  ASSERT_EQ(r.profiles.size(), 1u) << "exactly the live request is answered";
  const std::string& p = r.profiles[0];
  EXPECT_NE(p.find("\"t_ns\":" + std::to_string(asked)), std::string::npos) << p;
  const double max_rps = number_after(p, "max_rps");
  EXPECT_GT(number_after(p, "intervals"), 0) << p;
  EXPECT_GT(number_after(p, "probe_requests"), 0) << p;
  EXPECT_GT(max_rps, 5 * 40.0) << p;

  // The window opens when the control file is next read and the line that straddles its
  // end is unmarked yet carries probe traffic; a loaded host stretches both, so the
  // baseline uses only lines wholly clear of the window and a generous margin after it.
  const auto overlaps_window = [&](const std::string& line) {
    const double end = number_after(line, "t_ns");
    const double begin = end - number_after(line, "interval_ns");
    return end > static_cast<double>(asked) && begin < static_cast<double>(asked) + 600e6;
  };
  double best_inside = 0, best_outside = 0;
  int inside = 0, clear_of_window = 0;
  for (const auto& line : r.live_lines) {
    const double rps = number_after(line, "rps");
    if (line.find("\"profile\":null") == std::string::npos) {
      ++inside;
      EXPECT_NE(line.find("\"t_ns\":" + std::to_string(asked) + ",\"cpu\""), std::string::npos);
      const double t = number_after(line, "t_ns");
      const double len = number_after(line, "interval_ns");
      EXPECT_GE(t - len, static_cast<double>(asked)) << "a marked line starts in the window";
      EXPECT_LE(t, static_cast<double>(asked) + 400e6) << "and ends in it";
      best_inside = std::max(best_inside, rps);
    } else if (number_after(line, "interval_ns") > 40e6 && !overlaps_window(line)) {
      ++clear_of_window;
      best_outside = std::max(best_outside, rps);
    }
  }
  EXPECT_EQ(inside, static_cast<int>(number_after(p, "intervals")));
  EXPECT_DOUBLE_EQ(best_inside, max_rps);
  EXPECT_GT(clear_of_window, 0) << "the run must outlast the window to have a baseline";
  EXPECT_GT(best_inside, 2 * best_outside);
  for (const auto& rec : r.records) {
    EXPECT_LT(rec.request_id, 1ULL << 63) << "no probe in the records";
  }
  EXPECT_EQ(r.failed, 0u);
}
