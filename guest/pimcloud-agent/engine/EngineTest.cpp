#include "engine/Engine.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/TestDriver.h"
#include "policy/PimCloud.h"

namespace pimcloud {
namespace {

using testing::Driver;

struct RecordingControl : HarnessControl {
  std::vector<std::string> lines;
  void send(const std::string& line) override { lines.push_back(line); }
};

// Where the agent's placed file goes: a fresh temporary folder, removed with it.
struct PlacedFile {
  std::string dir = "/tmp/placed-XXXXXX";
  std::string path;
  PlacedFile() {
    if (mkdtemp(dir.data()) != nullptr) path = dir + "/placed";
  }
  ~PlacedFile() {
    std::remove(path.c_str());
    rmdir(dir.c_str());
  }
  bool exists() const { return std::ifstream(path).good(); }
};

TEST(EnginePlacement, RemotePimCoreMigratesHottestPagesAndUndoes) {
  RecordingControl control;
  Driver e("pimcloud");
  e.engine = std::make_unique<Engine>(e.topology, *e.policy, e.machine, e.source, e.log, &control,
                                      EngineOptions{});
  e.remotePimCoreApps();
  e.overloadFriendly();
  const int pid = 1001;
  std::size_t onStack2 = 0;
  for (const PageInfo& p : e.machine.pagesOf.at(pid)) onStack2 += p.node == 2;
  EXPECT_GT(onStack2, 0U);
  // The hottest page moved first.
  EXPECT_EQ(e.machine.pagesOf.at(pid).front().node, 2);
  std::uint64_t logged = 0;
  for (const Decision& x : e.log.history()) logged += x.pagesMoved;
  EXPECT_GE(logged, onStack2);
  // The decision says which pages were chosen, by what: their hotness, hottest first.
  bool said = false;
  for (const Decision& x : e.log.history()) {
    if (x.values.count("planned_pages") == 0) continue;
    said = true;
    EXPECT_GT(x.values.at("planned_pages"), 0);
    EXPECT_NE(x.reason.find("pages planned for cpu"), std::string::npos) << x.reason;
    EXPECT_NE(x.reason.find("(idle)"), std::string::npos) << x.reason;
  }
  EXPECT_TRUE(said);
  bool replicate = false;
  for (const std::string& l : control.lines) replicate |= l.find("\"replicate\"") != std::string::npos;
  EXPECT_TRUE(replicate);
  // A remote PIM core runs one dedicated thread.
  const auto& assign = e.engine->applied();
  const auto ded = assign.dedicatedCpus.find(e.id("friendly"));
  ASSERT_NE(ded, assign.dedicatedCpus.end());
  ASSERT_FALSE(ded->second.empty());
  bool pinnedAlone = false;
  for (const auto& [tid, cpus] : e.machine.threadCpus) {
    pinnedAlone |= cpus.size() == 1 && cpus[0] == ded->second.front();
  }
  EXPECT_TRUE(pinnedAlone);
  // Later core changes rewrite the cpuset (which resets affinities): every remote core
  // still has its own thread.
  e.machine.setLoad("averse", 900);
  e.tick(40);
  const auto& nowDedicated = e.engine->applied().dedicatedCpus;
  const auto it = nowDedicated.find(e.id("friendly"));
  ASSERT_NE(it, nowDedicated.end());
  std::size_t aloneCores = 0;
  for (int cpu : it->second) {
    int alone = 0;
    for (const auto& [tid, cpus] : e.machine.threadCpus) alone += cpus == std::vector<int>{cpu};
    EXPECT_LE(alone, 1) << "cpu " << cpu;
    aloneCores += alone;
  }
  // 4 threads: up to 3 get a remote core each, one at least stays on the shared cores.
  EXPECT_EQ(aloneCores, std::min<std::size_t>(it->second.size(), 3));
  int shared = 0;
  for (int t = 0; t < 4; ++t) shared += e.machine.threadCpus.at(1001 * 100 + t).size() > 1;
  EXPECT_GE(shared, 1);

  // Load drops: the remote cores go, and their pages come back to the resident stack.
  e.machine.setLoad("friendly", 100);
  e.tick(300);
  onStack2 = 0;
  for (const PageInfo& p : e.machine.pagesOf.at(pid)) onStack2 += p.node == 2;
  EXPECT_EQ(onStack2, 0U);
  bool dropped = false;
  for (const std::string& l : control.lines) dropped |= l.find("drop-replicas") != std::string::npos;
  EXPECT_TRUE(dropped);
}

TEST(EnginePlacement, AShadowSourcesChoiceOfTheSamePagesIsLoggedBesideThePlan) {
  Driver e("pimcloud");
  e.machine.hotness = "hw";
  e.remotePimCoreApps();
  // The counters: page i counts i + 1, so their 1000 hottest are pages 3000-3999.
  for (std::size_t i = 0; i < 4000; ++i) {
    e.machine.pagesOf.at(1001)[i].hotness = static_cast<std::uint32_t>(i + 1);
  }
  // The shadow (idle scans) saw every odd page touched once and every tenth page twice:
  // its top 1000 are the 400 tenth pages and then the first 600 odd ones, 1-1199 (ties in
  // address order; in the counters' order they would be 2801-3999, and 600 in common).
  // In common: the 100 tenth pages of 3000-3999. The shadow saw 600 of the counters' 1000.
  e.machine.shadowSource = "idle";
  const std::uintptr_t base = e.machine.pagesOf.at(1001).front().addr;
  for (std::size_t i = 0; i < 4000; ++i) {
    const std::uint32_t c = i % 10 == 0 ? 2 : i % 2;
    if (c > 0) e.machine.shadowCounts[base + i * FakeMachine::kPageBytes] = c;
  }
  e.overloadFriendly();
  const Decision* first = nullptr;
  for (const Decision& x : e.log.history()) {
    if (x.values.count("shadow_common_pages") != 0) {
      first = &x;
      break;
    }
  }
  ASSERT_NE(first, nullptr) << "no decision carried the shadow's choice";
  ASSERT_EQ(first->values.at("candidate_pages"), 4000) << first->reason;
  ASSERT_EQ(first->values.at("planned_pages"), 1000) << first->reason;
  EXPECT_EQ(first->values.at("shadow_planned_pages"), 1000);
  EXPECT_EQ(first->values.at("shadow_common_pages"), 100);
  EXPECT_EQ(first->values.at("shadow_hot_pages"), 1000);
  EXPECT_EQ(first->values.at("shadow_tied_at_cut"), 2000);  // every odd page counts 1
  EXPECT_EQ(first->values.at("shadow_hot_among_planned"), 600);
  EXPECT_NE(first->reason.find("idle (shadow) would have chosen 1000 of the 4000 pages: 100 the "
                               "same, counts 2, 2, 2"),
            std::string::npos)
      << first->reason;
  // The one home of this decision's shape: analysis reads the same line
  // (analysis/tests/test_metrics.py, metrics.hotness_choices).
  const nlohmann::json written = nlohmann::json::parse(decisionToJson(*first));
  std::ifstream in(std::string(PIMCLOUD_AGENT_FIXTURES) + "/decisions/migrate-shadow.json");
  if (std::getenv("PIMCLOUD_PRINT_FIXTURE") != nullptr) std::printf("%s\n", written.dump().c_str());
  ASSERT_TRUE(in.good()) << "fixtures/decisions/migrate-shadow.json is missing";
  const nlohmann::json fixture = nlohmann::json::parse(in);
  EXPECT_EQ(written["event"], fixture["event"]);
  EXPECT_EQ(written["values"], fixture["values"]);
  // Without a shadow, no such values.
  Driver plain("pimcloud");
  plain.remotePimCoreApps();
  plain.overloadFriendly();
  for (const Decision& x : plain.log.history()) EXPECT_EQ(x.values.count("shadow_common_pages"), 0U);
}

TEST(EnginePlacement, PlacedFileOnceTheInitialAllocationAndItsGatherAreDone) {
  PlacedFile placed;
  EngineOptions opts;
  opts.placedPath = placed.path;
  opts.migrationChunkPages = 10;
  std::int64_t hostNs = 0;
  // Each clock read 15 ms on: one 10-page chunk an interval within the 20 ms budget.
  opts.clock = [&hostNs] { return hostNs += 15'000'000; };
  Driver d("pimcloud", {}, Topology::paper(), opts);
  d.app("averse", 300, 100, 100, 1, 50);  // 50 pages on stack 1; its resident stack is 2
  d.app("friendly", 100, 200, 100, 1);
  auto exists = [&placed] { return placed.exists(); };
  EXPECT_FALSE(exists());
  int ticks = 0;
  while (!exists() && ticks < 20) {
    d.tick();
    ++ticks;
    std::size_t onTwo = 0;
    for (const PageInfo& p : d.machine.pagesOf.at(1000)) onTwo += p.node == 2;
    if (exists()) {
      EXPECT_EQ(onTwo, 50U) << "written before the gather was done";
    } else {
      EXPECT_LT(onTwo, 50U) << "the gather was done at tick " << ticks << ": no file";
    }
  }
  EXPECT_GT(ticks, 3) << "50 pages at 10 a tick take five ticks";
  EXPECT_LT(ticks, 20);
  std::size_t notes = 0;
  for (const Decision& x : d.log.history()) notes += x.event == "placed";
  d.tick(3);
  for (const Decision& x : d.log.history()) notes += x.event == "placed";
  EXPECT_EQ(notes, 2U) << "one note, seen in both counts: written once";
}

TEST(EnginePlacement, StopsAtTheTargetStacksFreeMemory) {
  Topology small = Topology::make(4, 2, 8, 8ULL << 20);  // 8 MiB stacks: 2048 pages
  EngineOptions opts;
  opts.reserveBytes = 0;
  Driver e("pimcloud", {}, small, opts);
  e.app("averse", 300, 100, 100, 2);
  e.app("friendly", 100, 200, 100, 1, 1800, 1);
  e.machine.freeBytes[2] = 100 * FakeMachine::kPageBytes;  // stack 2 nearly full
  e.overloadFriendly(60, 60);
  std::size_t onStack2 = 0;
  for (const PageInfo& p : e.machine.pagesOf.at(1001)) onStack2 += p.node == 2;
  EXPECT_GT(onStack2, 0U);
  EXPECT_LE(onStack2, 100U);
  bool full = false;
  for (const Decision& x : e.log.history()) full |= x.reason.find("no more free memory") != std::string::npos;
  EXPECT_TRUE(full);
}

TEST(EnginePlacement, ConcentratedGathersPagesOnTheResidentStackOnce) {
  for (StaticPlacement sp : {StaticPlacement::Concentrated, StaticPlacement::FirstTouch}) {
    EngineOptions opts;
    opts.staticPlacement = sp;
    Driver d("pimcloud", {}, Topology::paper(), opts);
    d.app("averse", 300, 100, 100, 1, 50);  // pages on stack 1, resident stack will be 2
    d.app("friendly", 100, 200, 100, 1);
    d.tick(5);
    std::size_t onTwo = 0;
    for (const PageInfo& p : d.machine.pagesOf.at(1000)) onTwo += p.node == 2;
    std::size_t events = 0;
    for (const Decision& x : d.log.history()) events += x.event == "concentrate" && x.appName == "averse";
    if (sp == StaticPlacement::Concentrated) {
      EXPECT_EQ(onTwo, 50U);
      EXPECT_EQ(events, 1U);
    } else {
      EXPECT_EQ(onTwo, 0U);
      EXPECT_EQ(events, 0U);
    }
  }
}

// CC on a PIM-only system: an app's pages are gathered on its resident stack's node, the
// stacks being nodes 0 and 1 (here the first app's resident stack is 2, node 1).
TEST(EnginePlacement, ConcentratedGathersOnTheResidentStacksNodeOnAPimOnlySystem) {
  EngineOptions opts;
  opts.staticPlacement = StaticPlacement::Concentrated;
  Topology t = Topology::make(0, 2, 8);
  t.firstStackNode = 0;
  Driver d("pimcloud", {}, t, opts);
  d.app("a", 300, 100, 100, 0, 30);  // pages on node 0 (stack 1)
  d.app("b", 300, 100, 100, 0, 30);
  d.tick(5);
  std::map<std::string, int> resident;
  for (const Decision& x : d.log.history()) {
    if (x.event == "concentrate") resident[x.appName] = x.reason.back() - '0';
  }
  ASSERT_EQ(resident, (std::map<std::string, int>{{"a", 2}, {"b", 1}}));
  EXPECT_EQ(d.machine.pagesPerNode(1000), (std::map<int, std::uint64_t>{{1, 30}}));
  EXPECT_EQ(d.machine.pagesPerNode(1001), (std::map<int, std::uint64_t>{{0, 30}}));
}

TEST(EnginePlacement, ConcentrateAsksForHotnessOnlyWhenTheGatherMayBeCutShort) {
  // roomy: the resident stack takes every page; tight: 10 of 50 fit; queued: 60 would
  // fit, but 50 pages of another move already queued there leave room for 10.
  for (const std::string room : {"roomy", "tight", "queued", "idle"}) {
    EngineOptions opts;
    opts.staticPlacement = StaticPlacement::Concentrated;
    Driver d("pimcloud", {}, Topology::paper(), opts);
    d.machine.hotness = room == "idle" ? "idle" : "hw";
    if (room == "queued") d.app("other", 100, 200, 100, 1, 50);  // gathered first, to stack 2
    const int pid = d.nextPid;
    d.app("averse", 300, 100, 100, 1, 50);  // pages on stack 1, resident stack will be 2
    d.app("friendly", 100, 200, 100, 1);
    // The hottest pages at the highest addresses: address order is not hotness order.
    auto& pages = d.machine.pagesOf.at(pid);
    for (std::size_t i = 0; i < pages.size(); ++i) pages[i].hotness = static_cast<std::uint32_t>(i);
    const bool roomy = room == "roomy";
    if (room == "tight" || room == "idle") {
      d.machine.freeBytes[2] = opts.reserveBytes + 10 * opts.pageBytes;
    }
    if (room == "queued") d.machine.freeBytes[2] = opts.reserveBytes + 60 * opts.pageBytes;
    d.tick(1);
    std::vector<std::uint32_t> gathered;
    for (const PageInfo& p : d.machine.pagesOf.at(pid)) {
      if (p.node == 2) gathered.push_back(p.hotness);
    }
    if (roomy) {
      EXPECT_EQ(d.machine.hotPagesCalls, 0) << "every page fits: no hotness asked";
      EXPECT_GT(d.machine.pagesOnCalls, 0);
      EXPECT_EQ(gathered.size(), 50U);
    } else {
      EXPECT_GT(d.machine.hotPagesCalls, 0) << room;
      ASSERT_LE(gathered.size(), 10U) << room;
      for (const std::uint32_t h : gathered) EXPECT_GE(h, 40U) << room << ": the hottest first";
    }
  }
}

TEST(EngineRecovery, AppThatVanishesMidStepIsRemovedNotFatal) {
  Driver d("pimcloud");
  d.app("a", 300, 100, 100, 2);
  d.app("b", 100, 200, 100, 1);
  d.tick(5);
  d.machine.deadApps.insert("b");  // gone without an exit event
  d.machine.setLoad("a", 3000);    // forces core changes, which touch b
  d.tick(80);
  auto& p = dynamic_cast<PimCloudPolicy&>(*d.policy);
  EXPECT_EQ(p.ranking().size(), 1U);
  bool noted = false;
  for (const Decision& x : d.log.history()) noted |= x.event == "exit" && x.appName == "b";
  EXPECT_TRUE(noted);
}

TEST(EngineRecovery, VanishedThreadIsSkippedForARemoteCore) {
  Driver e("pimcloud");
  e.app("averse", 300, 100, 100, 2);
  e.app("friendly", 100, 200, 100, 1, 100, 3);
  for (int t = 0; t < 2; ++t) e.machine.deadTids.insert(1001 * 100 + t);  // first two gone
  e.tick(60);
  e.machine.setLoad("averse", 50);
  e.machine.setLoad("friendly", 2000);
  e.tick(60);
  bool third = false;
  for (const auto& [tid, cpus] : e.machine.threadCpus) third |= tid == 1001 * 100 + 2 && cpus.size() == 1;
  EXPECT_TRUE(third);
}

TEST(EngineLog, JsonLinesAndAnAtomicSummary) {
  char dir[] = "/tmp/pimcloud-agent-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string logPath = std::string(dir) + "/decisions.jsonl";
  const std::string summaryPath = std::string(dir) + "/summary.json";
  {
    Topology t = Topology::paper();
    FakeMachine m(t);
    FakeLatencySource src(m);
    DecisionLog log(logPath);
    PolicyContext ctx{&t, {}};
    auto policy = PolicyRegistry::create("pimcloud", ctx);
    Engine engine(t, *policy, m, src, log, nullptr, {});
    FakeAppModel model;
    model.load = 2000;
    model.maxRpsHost = 300;
    model.maxRpsPim = 100;
    m.addApp("a", 7, model);
    src.start("a", 1e7, 300, 100);
    for (int i = 1; i <= 30; ++i) {
      src.setTime(i * 100'000'000LL);
      engine.tick(i * 100'000'000LL);
    }
    std::string error;
    ASSERT_TRUE(log.writeSummary(summaryPath, policy->name(), error)) << error;
  }
  std::ifstream in(logPath);
  std::string line;
  int lines = 0;
  bool upsize = false;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* k : {"t_ns", "event", "app", "from_cores", "to_cores", "pages_moved", "slack",
                          "reason"}) {
      ASSERT_TRUE(j.contains(k)) << k << " in " << line;
    }
    upsize |= j["event"] == "upsize";
    ++lines;
  }
  EXPECT_GT(lines, 1);
  EXPECT_TRUE(upsize);
  std::ifstream s(summaryPath);
  auto summary = nlohmann::json::parse(s);
  EXPECT_EQ(summary["policy"], "pimcloud");
  EXPECT_GT(summary["apps"]["a"]["intervals"].get<int>(), 0);
  EXPECT_GT(summary["apps"]["a"]["intervals_violating_qos"].get<int>(), 0);
  std::remove(logPath.c_str());
  std::remove(summaryPath.c_str());
  rmdir(dir);
}

TEST(EngineProfiling, UnknownAppIsProfiledOnOneHostThenOnePimCore) {
  Driver d("pimcloud");
  RecordingControl control;
  d.engine = std::make_unique<Engine>(d.topology, *d.policy, d.machine, d.source, d.log, &control,
                                      EngineOptions{});
  FakeAppModel m;
  m.load = 100000;  // saturating, as the harness drives it while profiling
  m.maxRpsHost = 300;
  m.maxRpsPim = 100;
  d.machine.addApp("new", 4242, m);
  d.source.start("new", 1e7, 0, 0);  // no profile known
  d.tick(15);
  ASSERT_GE(control.lines.size(), 3U);
  EXPECT_NE(control.lines[0].find("\"core_type\":\"host\""), std::string::npos);
  EXPECT_NE(control.lines[1].find("\"core_type\":\"pim\""), std::string::npos);
  EXPECT_NE(control.lines[2].find("profile-done"), std::string::npos);
  bool profiled = false;
  for (const Decision& x : d.log.history()) {
    if (x.event == "profile") {
      profiled = true;
      EXPECT_NE(x.reason.find("R=3"), std::string::npos) << x.reason;
    }
  }
  EXPECT_TRUE(profiled);
  EXPECT_EQ(dynamic_cast<PimCloudPolicy&>(*d.policy).ranking().size(), 1U);
}

TEST(LatencySource, ParsesStatsAndEventsAndNamesBadLines) {
  LatencyBatch b;
  EXPECT_TRUE(parseLatencyLine(
      R"({"app":"x","t_ns":5,"p99_ns":100,"mean_ns":50,"count":3,"rps":30,"tids":[1,2]})", 1, b));
  EXPECT_TRUE(parseLatencyLine(R"({"event":"start","app":"y","pid":9,"qos_ns":1000})", 2, b));
  EXPECT_FALSE(parseLatencyLine(R"({"app":"x","t_ns":5})", 3, b));
  EXPECT_FALSE(parseLatencyLine("not json", 4, b));
  EXPECT_FALSE(parseLatencyLine(R"({"event":"start","app":"z"})", 5, b));
  ASSERT_EQ(b.stats.count("x"), 1U);
  EXPECT_EQ(b.stats["x"].tids.size(), 2U);
  ASSERT_EQ(b.events.size(), 1U);
  EXPECT_EQ(b.events[0].pid, 9);
  ASSERT_EQ(b.errors.size(), 3U);
  EXPECT_NE(b.errors[0].find("line 3"), std::string::npos);
  EXPECT_NE(b.errors[0].find("p99_ns"), std::string::npos);
  EXPECT_NE(b.errors[2].find("qos_ns"), std::string::npos);
}

TEST(LatencySource, ParsesTheProfileMarkerAndIntervalLength) {
  LatencyBatch b;
  // 2^53 + 1: a t_ns a double cannot hold; the marker must name the request exactly.
  EXPECT_TRUE(parseLatencyLine(
      R"({"app":"x","t_ns":7,"interval_ns":90000000,"p99_ns":1,"count":1,"rps":10,)"
      R"("profile":{"t_ns":9007199254740993,"cpu":3,"core_type":"pim"}})", 1, b));
  EXPECT_TRUE(parseLatencyLine(R"({"app":"x","t_ns":8,"p99_ns":1,"count":1,"profile":null})", 2,
                               b));
  EXPECT_TRUE(parseLatencyLine(R"({"app":"x","t_ns":9,"p99_ns":1,"count":1})", 3, b));
  EXPECT_FALSE(parseLatencyLine(R"({"app":"x","t_ns":9,"p99_ns":1,"count":1,"profile":"pim"})",
                                4, b));
  ASSERT_EQ(b.lines["x"].size(), 3U);  // every line, in order
  const IntervalStats& marked = b.lines["x"][0];
  EXPECT_EQ(marked.intervalNs, 90'000'000);
  EXPECT_TRUE(marked.marksProfiles);
  ASSERT_TRUE(marked.profile.has_value());
  EXPECT_EQ(marked.profile->tNs, 9007199254740993LL);
  EXPECT_EQ(marked.profile->cpu, 3);
  EXPECT_EQ(marked.profile->coreType, "pim");
  EXPECT_TRUE(b.lines["x"][1].marksProfiles);  // null: outside every window
  EXPECT_FALSE(b.lines["x"][1].profile.has_value());
  EXPECT_FALSE(b.lines["x"][2].marksProfiles);  // an older harness
  EXPECT_EQ(b.lines["x"][2].intervalNs, 0);
  EXPECT_EQ(b.stats["x"].tNs, 9);  // the latest
  ASSERT_EQ(b.errors.size(), 1U);
  EXPECT_NE(b.errors[0].find("\"profile\""), std::string::npos) << b.errors[0];
}

TEST(LatencySource, FileKeepsAPartialLineForTheNextPoll) {
  char path[] = "/tmp/pimcloud-latency-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  FileLatencySource src(path);
  const std::string a = R"({"app":"x","t_ns":1,"p99_ns":10,"count":1})" "\n" R"({"app":"y","t_ns")";
  ASSERT_EQ(write(fd, a.data(), a.size()), static_cast<ssize_t>(a.size()));
  LatencyBatch b1 = src.poll();
  EXPECT_EQ(b1.stats.size(), 1U);
  const std::string rest = R"(:1,"p99_ns":20,"count":2})" "\n";
  ASSERT_EQ(write(fd, rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  LatencyBatch b2 = src.poll();
  ASSERT_EQ(b2.stats.count("y"), 1U);
  EXPECT_EQ(b2.stats["y"].p99Ns, 20);
  EXPECT_TRUE(b2.errors.empty());
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace pimcloud

namespace pimcloud {
namespace {

int bindDatagram(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  unlink(path.c_str());
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  return fd;
}

void sendDatagram(const std::string& path, const std::string& text) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size());
  const int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
  sendto(fd, text.data(), text.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  close(fd);
}

TEST(LatencySource, HarnessLineWithExtraFieldsOverAUnixSocket) {
  const std::string path = "/tmp/pimcloud-agent-stats-" + std::to_string(getpid()) + ".sock";
  std::string error;
  auto src = openLatencySource("unix:" + path, error);
  ASSERT_TRUE(error.empty()) << error;
  // A line as workloads/harness writes it (live_stats.cc).
  sendDatagram(path,
               R"({"app":"xapian","pid":321,"seq":4,"t_ns":500000000,"interval_ns":100000000,)"
               R"("phase":"measured","count":80,"rps":800.000,"offered_rps":800.000,"p50_ns":1000,)"
               R"("p99_ns":90000,"mean_ns":2000,"max_ns":100000,"queue_mean_ns":10,)"
               R"("service_mean_ns":1990,"tids":[322,323],"replicas":[],"threads":[]})");
  const LatencyBatch b = src->poll();
  ASSERT_TRUE(b.errors.empty()) << b.errors[0];
  ASSERT_EQ(b.stats.count("xapian"), 1U);
  EXPECT_EQ(b.stats.at("xapian").pid, 321);
  EXPECT_EQ(b.stats.at("xapian").p99Ns, 90000);
  EXPECT_EQ(b.stats.at("xapian").tids, (std::vector<int>{322, 323}));
  src.reset();
  EXPECT_NE(access(path.c_str(), F_OK), 0);  // the socket file is removed
}

struct ScriptedSource : LatencySource {
  std::vector<LatencyBatch> batches;
  LatencyBatch poll() override {
    if (batches.empty()) return {};
    LatencyBatch b = batches.front();
    batches.erase(batches.begin());
    return b;
  }
};

// "svc" from the agent's config (known rates, 1 ms QoS), its pid not known yet, under
// PIMCloud on the paper topology, fed by a scripted latency source.
struct ConfiguredApp {
  Topology t = Topology::paper();
  FakeMachine m{t};
  ScriptedSource src;
  DecisionLog log;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<Engine> engine;
  explicit ConfiguredApp(const EngineOptions& opts = {}) {
    PolicyContext ctx{&t, {}};
    policy = PolicyRegistry::create("pimcloud", ctx);
    engine = std::make_unique<Engine>(t, *policy, m, src, log, nullptr, opts);
    AppSpec spec;
    spec.name = "svc";
    spec.qosNs = 1e6;
    spec.maxRpsHost = 3;
    spec.maxRpsPim = 1;
    engine->addApp(spec, 0);
  }
};

TEST(EngineInput, ConfiguredAppLearnsItsPidFromStatsAndUnknownAppsAreNoted) {
  ConfiguredApp c;
  FakeMachine& m = c.m;
  ScriptedSource& src = c.src;
  DecisionLog& log = c.log;
  Engine& engine = *c.engine;
  IntervalStats st;
  st.p99Ns = 1;
  st.count = 1;
  st.pid = 777;
  LatencyBatch b;
  b.stats["svc"] = st;
  b.stats["stranger"] = st;
  src.batches = {b, b};
  engine.tick(1);
  m.appCpus.clear();
  src.batches.front().stats["svc"].p99Ns = 1e9;  // violation: its cores change again
  for (int i = 0; i < 8; ++i) {
    src.batches.push_back(src.batches.front());
    engine.tick(2 + i);
  }
  ASSERT_EQ(m.appCpus.count("svc"), 1U);
  EXPECT_EQ(m.appPids.at("svc"), 777);
  std::size_t noted = 0;
  for (const Decision& x : log.history()) noted += x.reason.find("\"stranger\"") != std::string::npos;
  EXPECT_EQ(noted, 1U);  // once, not every interval
}

TEST(EngineInput, AnAppPlacedBeforeItsPidIsKnownIsMovedInWhenItIsLearnt) {
  // A configured app with known rates enters the policy at once, before the harness
  // announces its pid (QEMU: the agent starts before the services load): its cores go to
  // its cgroup, and the process itself when its pid arrives, with no core change needed;
  // the placed file waits for that.
  PlacedFile placed;
  EngineOptions opts;
  opts.placedPath = placed.path;
  ConfiguredApp c(opts);
  FakeMachine& m = c.m;
  ScriptedSource& src = c.src;
  Engine& engine = *c.engine;
  src.batches = {LatencyBatch{}, LatencyBatch{}};
  engine.tick(1);
  engine.tick(2);
  ASSERT_EQ(m.appCpus.count("svc"), 1U) << "placed by its cgroup's CPUs";
  EXPECT_EQ(m.appPids.at("svc"), 0);
  EXPECT_FALSE(placed.exists()) << "no process in its cgroup yet";
  IntervalStats st;
  st.p99Ns = 1;  // far below QoS: no core change
  st.count = 1;
  st.pid = 777;
  LatencyBatch b;
  b.stats["svc"] = st;
  src.batches = {b, b};
  engine.tick(3);
  EXPECT_EQ(m.appPids.at("svc"), 777) << "moved in as soon as its pid is known";
  EXPECT_TRUE(placed.exists());
}

TEST(EnginePlacement, ReplicationRequestReachesTheServiceControlSocket) {
  const std::string sock = "/tmp/pimcloud-agent-ctl-" + std::to_string(getpid()) + ".sock";
  const int fd = bindDatagram(sock);
  ASSERT_GE(fd, 0);
  Driver e("pimcloud");
  e.engine = std::make_unique<Engine>(e.topology, *e.policy, e.machine, e.source, e.log, nullptr,
                                      EngineOptions{});
  AppSpec averse{"averse", 1e7, 300, 100, 4};
  AppSpec friendly{"friendly", 1e7, 100, 200, 4};
  FakeAppModel ma;
  ma.load = 100;
  ma.maxRpsHost = 300;
  ma.maxRpsPim = 100;
  ma.homeNode = 2;
  FakeAppModel mf;
  mf.load = 100;
  mf.maxRpsHost = 100;
  mf.maxRpsPim = 200;
  e.machine.addApp("averse", 1000, ma);
  e.machine.addApp("friendly", 1001, mf, 4, 100);
  e.engine->addApp(averse, 1000);
  e.engine->addApp(friendly, 1001, sock);
  e.tick(60);
  e.machine.setLoad("averse", 50);
  e.machine.setLoad("friendly", 2000);
  e.tick(60);
  char buf[64] = {};
  const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), "replicate 2");
  close(fd);
  unlink(sock.c_str());
}


// An app without a profile, a scripted harness, and the agent's requests as they go out.
struct ProfilingRig {
  static constexpr std::int64_t kT0 = 1'000'000'000;
  static constexpr std::int64_t kInterval = 100'000'000;
  Topology t = Topology::paper();
  FakeMachine m{t};
  ScriptedSource src;
  DecisionLog log;
  RecordingControl control;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<Engine> engine;
  std::int64_t now = kT0;

  ProfilingRig() {
    PolicyContext ctx{&t, {}};
    policy = PolicyRegistry::create("pimcloud", ctx);
    engine = std::make_unique<Engine>(t, *policy, m, src, log, &control, EngineOptions{});
    AppSpec spec;
    spec.name = "svc";
    spec.qosNs = 1e7;
    engine->addApp(spec, 4242);
    engine->tick(now);  // the host request, at kT0
  }
  // The n-th profile request the agent wrote (0 host, 1 PIM), as the harness echoes it.
  ProfileMarker request(std::size_t n) const {
    std::size_t seen = 0;
    for (const std::string& line : control.lines) {
      const auto j = nlohmann::json::parse(line);
      if (j["event"] != "profile" || seen++ != n) continue;
      return {j["t_ns"].get<std::int64_t>(), j["cpu"].get<int>(),
              j["core_type"].get<std::string>()};
    }
    ADD_FAILURE() << "no profile request " << n;
    return {};
  }
  static IntervalStats line(std::int64_t endNs, double rps, std::int64_t intervalNs = kInterval) {
    IntervalStats s;
    s.tNs = endNs;
    s.intervalNs = intervalNs;
    s.rps = rps;
    s.count = 1;
    s.p99Ns = 1e6;
    return s;
  }
  static IntervalStats marked(std::int64_t endNs, double rps, std::optional<ProfileMarker> m) {
    IntervalStats s = line(endNs, rps);
    s.marksProfiles = true;
    s.profile = std::move(m);
    return s;
  }
  // One interval later, the harness having published `lines` since the last poll.
  void tick(const std::vector<IntervalStats>& lines = {}) {
    LatencyBatch b;
    for (const IntervalStats& s : lines) b.add("svc", s);
    src.batches.push_back(b);
    now += kInterval;
    engine->tick(now);
  }
  const Decision* profiled() const {
    for (const Decision& x : log.history()) {
      if (x.event == "profile") return &x;
    }
    return nullptr;
  }
};

TEST(EngineProfiling, CountsOnlyLinesWhoseMarkerNamesTheRequest) {
  ProfilingRig r;
  const ProfileMarker host = r.request(0);
  EXPECT_EQ(host.tNs, ProfilingRig::kT0);
  EXPECT_EQ(host.coreType, "host");
  ProfileMarker earlier = host;  // an earlier run's request, still in the harness's file
  earlier.tNs -= 1;
  ProfileMarker otherCpu = host;
  otherCpu.cpu += 1;
  r.tick({ProfilingRig::marked(r.now + 90'000'000, 300, host),
          ProfilingRig::marked(r.now + 95'000'000, 9000, std::nullopt),  // outside the window
          ProfilingRig::marked(r.now + 96'000'000, 8000, earlier),
          ProfilingRig::marked(r.now + 97'000'000, 7000, otherCpu)});
  r.tick({ProfilingRig::marked(r.now + 90'000'000, 310, host)});
  r.tick();
  r.tick();
  r.tick();  // kT0 + 500 ms: the PIM request
  const ProfileMarker pim = r.request(1);
  EXPECT_EQ(pim.tNs, ProfilingRig::kT0 + 500'000'000);
  EXPECT_EQ(pim.coreType, "pim");
  // The host window's last line arrives late, inside the PIM window: it is still the host's.
  r.tick({ProfilingRig::marked(r.now - 10'000'000, 320, host),
          ProfilingRig::marked(r.now + 90'000'000, 100, pim)});
  for (int i = 0; i < 4; ++i) r.tick();
  const Decision* d = r.profiled();
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("max RPS host 320 (3 lines marked with its request)"),
            std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("PIM 100 (1 lines marked with its request)"), std::string::npos)
      << d->reason;
  EXPECT_NE(d->reason.find("R=3.2"), std::string::npos) << d->reason;
  const auto done = nlohmann::json::parse(r.control.lines.back());
  EXPECT_EQ(done["event"], "profile-done");
  EXPECT_EQ(done["max_rps_host"], 320);
  EXPECT_EQ(done["max_rps_pim"], 100);
}

TEST(EngineProfiling, WithoutMarkersCountsLinesWhollyAfterTheRequest) {
  ProfilingRig r;
  // An older harness: no "profile" field. A line that began before the request mixes in
  // unsaturated time; one without interval_ns is taken as one agent interval long.
  r.tick({ProfilingRig::line(r.now + 50'000'000, 5000),
          ProfilingRig::line(r.now + 100'000'000, 300),
          ProfilingRig::line(r.now + 100'000'000, 290, 0)});
  for (int i = 0; i < 4; ++i) r.tick();
  ASSERT_EQ(r.request(1).tNs, ProfilingRig::kT0 + 500'000'000);
  // The host window's last line, read after the PIM request: not the PIM core's.
  r.tick({ProfilingRig::line(r.now + 20'000'000, 310),
          ProfilingRig::line(r.now + 100'000'000, 100)});
  for (int i = 0; i < 4; ++i) r.tick();
  const Decision* d = r.profiled();
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("max RPS host 300 (2 unmarked lines after its request (the harness "
                           "marks no profile windows))"),
            std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("PIM 100 (1 unmarked lines"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("R=3"), std::string::npos) << d->reason;
}

TEST(EngineProfiling, TakesTheLargestOfSeveralLinesInOnePoll) {
  ProfilingRig r;
  const ProfileMarker host = r.request(0);
  r.tick();
  r.tick();
  r.tick();
  r.tick();
  // A late tick: three lines at once, the largest not the latest.
  r.tick({ProfilingRig::marked(r.now - 300'000'000, 250, host),
          ProfilingRig::marked(r.now - 200'000'000, 300, host),
          ProfilingRig::marked(r.now - 100'000'000, 280, host)});
  const ProfileMarker pim = r.request(1);
  for (int i = 0; i < 4; ++i) r.tick();
  r.tick({ProfilingRig::marked(r.now - 200'000'000, 90, pim),
          ProfilingRig::marked(r.now - 100'000'000, 120, pim),
          ProfilingRig::marked(r.now, 95, pim)});
  const Decision* d = r.profiled();
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("max RPS host 300 (3 lines"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("PIM 120 (3 lines"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("R=2.5"), std::string::npos) << d->reason;
}

TEST(EngineProfiling, SaysWhenAMarkingHarnessAnsweredNoRequest) {
  ProfilingRig r;
  // A harness started without --control-file marks every line null.
  for (int i = 0; i < 10; ++i) {
    r.tick({ProfilingRig::marked(r.now + 90'000'000, 20, std::nullopt)});
  }
  const Decision* d = r.profiled();
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find("--control-file"), std::string::npos) << d->reason;
  EXPECT_NE(d->reason.find("R taken as 1"), std::string::npos) << d->reason;
}

TEST(EngineProfiling, WaitsUntilTheAppIsLiveBeforeProfiling) {
  // Listed in the config (no pid) while the service still loads its data: a profile
  // window now would close before the harness could answer it.
  Topology t = Topology::paper();
  FakeMachine m{t};
  ScriptedSource src;
  DecisionLog log;
  RecordingControl control;
  PolicyContext ctx{&t, {}};
  auto policy = PolicyRegistry::create("pimcloud", ctx);
  Engine engine(t, *policy, m, src, log, &control, EngineOptions{});
  AppSpec spec;
  spec.name = "svc";
  spec.qosNs = 1e7;
  engine.addApp(spec, 0);
  std::int64_t now = ProfilingRig::kT0;
  for (int i = 0; i < 5; ++i) engine.tick(now += ProfilingRig::kInterval);
  EXPECT_TRUE(control.lines.empty()) << control.lines.front();
  // Its first statistics line names its pid: now the host request goes out.
  IntervalStats first = ProfilingRig::line(now, 10);
  first.pid = 4242;
  LatencyBatch b;
  b.add("svc", first);
  src.batches.push_back(b);
  engine.tick(now += ProfilingRig::kInterval);
  ASSERT_EQ(control.lines.size(), 1U);
  EXPECT_NE(control.lines[0].find("\"core_type\":\"host\""), std::string::npos);
}

}  // namespace
}  // namespace pimcloud

namespace pimcloud {
namespace {

// Seed 004's dynamic tiering beside a tiered allocation policy, on the fake machine.
struct TieredDriver : testing::Driver {
  explicit TieredDriver(StaticPlacement placement, TieringMode mode = TieringMode::Promote)
      : Driver("default", {}, Topology::paper(), options(placement, mode)) {}
  explicit TieredDriver(EngineOptions o) : Driver("default", {}, Topology::paper(), std::move(o)) {}
  static EngineOptions options(StaticPlacement placement, TieringMode mode) {
    EngineOptions o;
    o.staticPlacement = placement;
    o.tiering = mode;
    o.tieringPages = 8;
    o.reserveBytes = 1 << 20;
    return o;
  }
  // `n` pages on `node`, with hotness `hot`.
  void pages(int pid, int node, std::size_t n, std::uint32_t hot, std::uintptr_t base) {
    for (std::size_t i = 0; i < n; ++i) machine.pagesOf[pid].push_back({base + i * 4096, node, hot});
  }
};

TEST(EngineTiering, PromotesHotSlowPagesToTheRoomiestStackAtMostNAnInterval) {
  TieredDriver d(StaticPlacement::FastPreferred);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;  // the Driver's first pid
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 64ULL << 20}, {2, 256ULL << 20}};
  d.pages(pid, kHostSlowNode, 20, 3, 0x100000);   // hot, on the slow tier
  d.pages(pid, kHostSlowNode, 20, 0, 0x900000);   // cold, on the slow tier: stay
  d.tick();
  auto on = [&](int node) { return d.machine.pagesPerNode(pid)[node]; };
  EXPECT_EQ(on(2), 8U);  // the stack with the most room, 8 pages an interval
  d.tick(3);
  EXPECT_EQ(on(2), 20U);  // every hot page, none of the cold ones
  EXPECT_EQ(on(kHostSlowNode), 20U);
  EXPECT_GE(d.log.events().at("promote"), 3U);
  EXPECT_EQ(d.log.events().count("demote"), 0U);
}

TEST(EngineTiering, FastAlwaysDemotesColdPagesOfAStackShortOfItsReserve) {
  TieredDriver d(StaticPlacement::FastAlways);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;  // the Driver's first pid
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 1ULL << 20}, {2, 1ULL << 20}};  // both short
  d.pages(pid, 1, 5, 2, 0x100000);   // hot: stay
  d.pages(pid, 1, 30, 0, 0x900000);  // cold: down, 8 an interval
  d.tick();
  EXPECT_EQ(d.machine.pagesPerNode(pid)[kHostSlowNode], 8U);
  d.tick(5);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[kHostSlowNode], 30U);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[1], 5U);
}

// A PIM-only system with far memory after its stacks (node 2): the free memory the
// policies see is per stack, and hot pages go up to the roomiest stack's node.
TEST(EngineTiering, OnAPimOnlySystemPromotesToTheRoomiestStacksNode) {
  EngineOptions o = TieredDriver::options(StaticPlacement::FastPreferred, TieringMode::Promote);
  o.slowNode = 2;
  Topology t = Topology::make(0, 2, 8);
  t.firstStackNode = 0;
  testing::Driver d("default", {}, t, o);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  d.machine.freeBytes = {{0, 256ULL << 20}, {1, 64ULL << 20}, {2, 1ULL << 30}};
  for (std::size_t i = 0; i < 8; ++i) d.machine.pagesOf[pid].push_back({0x100000 + i * 4096, 2, 3});
  d.tick();
  EXPECT_EQ(d.machine.pagesPerNode(pid)[0], 8U);  // stack 1, the roomiest
  EXPECT_EQ(d.machine.pagesPerNode(pid)[2], 0U);
}

// A slow tier on a CPU-less far-memory node (tiered-far-mini's node 3): the static
// placements name it, and promotion and demotion use it, never node 0.
TEST(TieredPlacement, FarMemoryNodeIsTheSlowTierOfEveryPlacement) {
  const MemPolicySpec fastPreferred = memPolicyFor(StaticPlacement::FastPreferred, 1, 2, 3);
  EXPECT_EQ(fastPreferred.mode, MemPolicySpec::Mode::Bind);  // preferred-many spills to 0
  EXPECT_EQ(fastPreferred.nodes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(memPolicyFor(StaticPlacement::FastAlways, 1, 2, 3).nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(memPolicyFor(StaticPlacement::SlowAlways, 1, 2, 3).nodes, std::vector<int>{3});
  EXPECT_EQ(memPolicyFor(StaticPlacement::SlowPreferred, 1, 2, 3).nodes, std::vector<int>{3});
  const MemPolicySpec hostDdr = memPolicyFor(StaticPlacement::FastPreferred, 1, 2);
  EXPECT_EQ(hostDdr.mode, MemPolicySpec::Mode::PreferredMany);
  EXPECT_EQ(hostDdr.nodes, (std::vector<int>{1, 2}));
  EXPECT_EQ(memPolicyFor(StaticPlacement::SlowAlways, 1, 2).nodes, std::vector<int>{0});
}

// A PIM-only system (arch9): the stacks are nodes 0 and 1.
TEST(TieredPlacement, StacksFromNodeZeroOnAPimOnlySystem) {
  const MemPolicySpec il = memPolicyFor(StaticPlacement::Interleave, 0, 2, kHostSlowNode, 0);
  EXPECT_EQ(il.nodes, (std::vector<int>{0, 1}));
  EXPECT_EQ(memPolicyFor(StaticPlacement::Concentrated, 1, 2, kHostSlowNode, 0).nodes,
            std::vector<int>{1});
  EXPECT_EQ(memPolicyFor(StaticPlacement::Interleave, 1, 2).nodes, (std::vector<int>{1, 2}));
}

TEST(EngineTiering, PromotesFromAndDemotesToAFarMemoryNode) {
  EngineOptions o = TieredDriver::options(StaticPlacement::FastAlways, TieringMode::Promote);
  o.slowNode = 3;
  TieredDriver d(o);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;  // the Driver's first pid
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 1ULL << 20}, {2, 256ULL << 20}, {3, 8ULL << 30}};
  for (std::size_t i = 0; i < 8; ++i) d.machine.pagesOf[pid].push_back({0x100000 + i * 4096, 3, 5});
  for (std::size_t i = 0; i < 8; ++i) d.machine.pagesOf[pid].push_back({0x900000 + i * 4096, 1, 0});
  d.tick(2);
  auto on = [&](int node) { return d.machine.pagesPerNode(pid)[node]; };
  EXPECT_EQ(on(2), 8U);  // hot far pages up to the roomiest stack (node 3 is not a stack)
  EXPECT_EQ(on(3), 8U);  // stack 1's cold pages down to the far node
  EXPECT_EQ(on(0), 0U);
  EXPECT_EQ(on(1), 0U);
}

// Seed 002's HeteroOS-LRU: below its watermark (reserve 1 MiB + 2 x 8 pages), a stack
// gives up the pages the kernel's LRU holds inactive, heap and page cache, and no others.
TEST(EngineTiering, HeteroOsLruEvictsInactiveHeapAndPageCachePagesOfAShortStack) {
  TieredDriver d(StaticPlacement::FastPreferred, TieringMode::HeteroOsLru);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  const int cache = FakeMachine::pageCacheOwner(pid);
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 512ULL << 10}, {2, 512ULL << 10}};  // both short
  d.machine.openFiles[pid] = 2;
  d.pages(pid, 1, 6, 5, 0x100000);    // active heap: stays
  d.pages(pid, 1, 12, 0, 0x900000);   // inactive heap: down, 8 an interval
  d.pages(pid, kHostSlowNode, 10, 9, 0x2000000);  // hot on the slow tier: LRU alone never promotes
  d.pages(cache, 1, 4, 0, 0x7000000);  // active page cache: stays
  d.pages(cache, 1, 10, 0, 0x7100000);  // inactive page cache: down
  d.pages(cache, 2, 3, 0, 0x7200000);   // inactive page cache on stack 2: down too
  for (int i = 0; i < 6; ++i) d.machine.activePages.insert(0x100000 + i * 4096);
  for (int i = 0; i < 4; ++i) d.machine.activePages.insert(0x7000000 + i * 4096);
  d.tick();
  EXPECT_EQ(d.machine.pagesPerNode(pid)[kHostSlowNode], 10U + 8U);
  EXPECT_EQ(d.machine.pagesPerNode(cache)[kHostSlowNode], 8U);  // 8 an interval, both stacks
  // One scan of the app's files an interval for every short stack: a second would drop
  // the mapping the first one's pages are queued in.
  EXPECT_EQ(d.machine.fileScans, 1);
  d.tick(4);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[1], 6U);      // the active heap pages only
  EXPECT_EQ(d.machine.pagesPerNode(cache)[1], 4U);    // the active cache pages only
  EXPECT_EQ(d.machine.pagesPerNode(cache)[2], 0U);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[2], 0U);      // no promotion
  EXPECT_GE(d.log.events().at("evict"), 2U);
  EXPECT_GE(d.log.events().at("evict-cache"), 2U);
  EXPECT_EQ(d.log.events().count("promote"), 0U);
}

// Evictions the migration budget leaves for later intervals, and an app that exits while
// its pages wait: none of its pages moves after its exit, the other app's all arrive, and
// the carried moves are logged as "migrate" (run under ASan, the engine's bookkeeping of
// decisions across intervals stays in bounds).
TEST(EngineTiering, HeteroOsEvictionsOutliveTheirIntervalAndAnAppThatExits) {
  EngineOptions o = TieredDriver::options(StaticPlacement::FastPreferred, TieringMode::HeteroOsLru);
  o.migrationChunkPages = 2;
  std::int64_t host = 0;
  o.clock = [&host] { return host += 6'000'000; };  // 6 ms a reading: a few chunks an interval
  TieredDriver d(o);
  d.app("a", 1000, 400, 100);
  d.app("b", 1000, 400, 100);
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 512ULL << 10}, {2, 512ULL << 10}};
  for (int pid : {1000, 1001}) {
    const auto base = static_cast<std::uintptr_t>(pid) << 24;
    d.machine.openFiles[pid] = 1;
    d.pages(pid, 1, 24, 0, base);
    d.pages(FakeMachine::pageCacheOwner(pid), 1, 24, 0, base + 0x800000);
  }
  d.tick(2);
  EXPECT_LT(d.machine.pagesPerNode(1001)[kHostSlowNode], 24U);  // still going on
  const auto movedOfA = d.machine.pagesPerNode(1000)[kHostSlowNode];
  EXPECT_LT(movedOfA, 24U);
  d.exit("a");
  d.tick(20);
  EXPECT_EQ(d.machine.pagesPerNode(1000)[kHostSlowNode], movedOfA);
  EXPECT_EQ(d.machine.pagesPerNode(1001)[kHostSlowNode], 24U);
  EXPECT_EQ(d.machine.pagesPerNode(FakeMachine::pageCacheOwner(1001))[kHostSlowNode], 24U);
  EXPECT_GE(d.log.events().at("migrate"), 1U);
  EXPECT_EQ(d.log.events().at("exit"), 1U);
}

TEST(EngineTiering, HeteroOsLruLeavesAStackAboveItsWatermarkAlone) {
  TieredDriver d(StaticPlacement::FastPreferred, TieringMode::HeteroOsLru);
  d.app("a", 1000, 400, 100);
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 256ULL << 20}, {2, 256ULL << 20}};
  d.pages(1000, 1, 12, 0, 0x900000);
  d.tick(3);
  EXPECT_EQ(d.machine.pagesPerNode(1000)[1], 12U);
  EXPECT_EQ(d.log.events().count("evict"), 0U);
  EXPECT_EQ(d.machine.fileScans, 0);
}

TEST(EngineTiering, HeteroOsCoordinatedAlsoPromotesHotSlowPages) {
  TieredDriver d(StaticPlacement::FastPreferred, TieringMode::HeteroOsCoordinated);
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 1ULL << 20}, {2, 256ULL << 20}};
  d.pages(pid, 1, 8, 0, 0x900000);           // inactive on the short stack
  d.pages(pid, kHostSlowNode, 8, 9, 0x2000000);  // hot on the slow tier
  d.tick(2);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[1], 0U);
  EXPECT_EQ(d.machine.pagesPerNode(pid)[2], 8U);  // up to the stack with room
  EXPECT_GE(d.log.events().at("promote"), 1U);
  EXPECT_GE(d.log.events().at("evict"), 1U);
}

TEST(EngineTiering, TieringModesByName) {
  for (TieringMode m : {TieringMode::Promote, TieringMode::HeteroOsLru,
                        TieringMode::HeteroOsCoordinated}) {
    EXPECT_EQ(parseTieringMode(toString(m)), m);
  }
  EXPECT_FALSE(parseTieringMode("lru"));
}

TEST(EngineTiering, NothingMovesWithoutATieredPlacement) {
  TieredDriver d(StaticPlacement::FirstTouch);
  d.app("a", 1000, 400, 100);
  d.machine.freeBytes = {{0, 1ULL << 30}, {1, 256ULL << 20}, {2, 256ULL << 20}};
  d.pages(1000, kHostSlowNode, 20, 3, 0x100000);
  d.tick(3);
  EXPECT_EQ(d.machine.pagesPerNode(1000)[kHostSlowNode], 20U);
  EXPECT_EQ(d.log.events().count("promote"), 0U);
}

// Page migration based on locality (III-D2, Verghese et al.): with the page-access
// counters, a hot page one CPU alone touches goes to that CPU's node, hottest first, at
// most localityPages an interval; shared and already-local pages stay.
TEST(EngineLocality, HotPrivatePagesGoToTheirOnlyCpusNode) {
  EngineOptions o;
  o.staticPlacement = StaticPlacement::Interleave;
  o.localityPages = 4;
  o.reserveBytes = 1 << 20;
  o.hotnessScanIntervals = 1;  // asks every interval
  testing::Driver d("default", {}, Topology::paper(), o);
  d.machine.pageCounters = true;
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  d.machine.freeBytes = {{0, 0}, {1, 256ULL << 20}, {2, 256ULL << 20}};
  auto page = [&](std::uintptr_t addr, int node, std::uint64_t count, bool shared, int cpu) {
    d.machine.pagesOf[pid].push_back({addr, node, 0});
    d.machine.accessed[addr] = {addr, node, count, shared, false, cpu};
  };
  for (std::uintptr_t i = 0; i < 6; ++i) page(0x100000 + i * 4096, 1, 100 - i, false, 12);  // CPU 12: stack 2
  page(0x200000, 1, 500, true, 12);   // shared: stays
  page(0x300000, 2, 400, false, 12);  // already local: stays
  page(0x400000, 2, 300, false, 4);   // CPU 4 is on stack 1
  page(0x500000, 1, 200, false, 0);   // a host CPU: node 0 has no memory, stays
  d.tick();  // the first interval clears the counters (the set-up's accesses) ...
  EXPECT_EQ(d.machine.counterResets, 1);
  EXPECT_EQ(d.machine.pagesOf[pid][0].node, 1);
  d.tick();  // ... and moves begin with the next
  EXPECT_EQ(d.machine.counterResets, 1);  // once
  auto nodeOf = [&](std::uintptr_t addr) {
    for (const PageInfo& p : d.machine.pagesOf[pid]) {
      if (p.addr == addr) return p.node;
    }
    return -1;
  };
  EXPECT_EQ(nodeOf(0x400000), 1);   // the hottest misplaced page first
  EXPECT_EQ(nodeOf(0x100000), 2);
  EXPECT_EQ(nodeOf(0x100000 + 2 * 4096), 2);
  EXPECT_EQ(nodeOf(0x100000 + 3 * 4096), 1);  // 4 an interval: the rest next time
  d.tick();
  for (std::uintptr_t i = 0; i < 6; ++i) EXPECT_EQ(nodeOf(0x100000 + i * 4096), 2);
  EXPECT_EQ(nodeOf(0x200000), 1);
  EXPECT_EQ(nodeOf(0x300000), 2);
  EXPECT_EQ(nodeOf(0x500000), 1);
  EXPECT_GE(d.log.events().at("locality"), 2U);
}

// A PIM-only system (arch9): node 0 is a stack with cores of its own (the sysfs topology
// types them as host cores on node 0) and memory; pages go there as to any stack.
TEST(EngineLocality, OnAPimOnlySystemNodeZeroIsAStackLikeTheOthers) {
  EngineOptions o;
  o.localityPages = 16;
  o.reserveBytes = 1 << 20;
  o.hotnessScanIntervals = 3;  // the counters are asked every third interval
  testing::Driver d("default", {}, Topology::make(8, 1, 8), o);  // CPUs 0-7 node 0, 8-15 node 1
  d.machine.pageCounters = true;
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  d.machine.freeBytes = {{0, 256ULL << 20}, {1, 256ULL << 20}};
  d.machine.pagesOf[pid] = {{0x100000, 1, 0}, {0x200000, 0, 0}};
  d.machine.accessed[0x100000] = {0x100000, 1, 50, false, false, 3};   // CPU 3: node 0
  d.machine.accessed[0x200000] = {0x200000, 0, 40, false, true, 12};   // CPU 12: node 1
  d.tick(3);  // the reset, then two intervals without asking
  EXPECT_EQ(d.machine.pagesOf[pid][0].node, 1);
  d.tick();
  EXPECT_EQ(d.machine.pagesOf[pid][0].node, 0);
  EXPECT_EQ(d.machine.pagesOf[pid][1].node, 1);
}

// A PIM-only system read as it is (placement.first_stack 0): stack 1 is node 0, stack 2
// node 1; a page goes to the node of its one CPU's stack, not to the node numbered like it.
TEST(EngineLocality, OnAPimOnlySystemPagesGoToTheirCpusStackNode) {
  EngineOptions o;
  o.localityPages = 16;
  o.reserveBytes = 1 << 20;
  o.hotnessScanIntervals = 1;
  Topology t = Topology::make(0, 2, 8);  // CPUs 0-7 stack 1, 8-15 stack 2
  t.firstStackNode = 0;
  testing::Driver d("default", {}, t, o);
  d.machine.pageCounters = true;
  d.app("a", 1000, 400, 100);
  const int pid = 1000;
  d.machine.freeBytes = {{0, 256ULL << 20}, {1, 256ULL << 20}};
  d.machine.pagesOf[pid] = {{0x100000, 1, 0}, {0x200000, 0, 0}, {0x300000, 0, 0}};
  d.machine.accessed[0x100000] = {0x100000, 1, 50, false, false, 3};   // CPU 3: stack 1, node 0
  d.machine.accessed[0x200000] = {0x200000, 0, 40, false, false, 12};  // CPU 12: stack 2, node 1
  d.machine.accessed[0x300000] = {0x300000, 0, 30, false, false, 5};   // already local
  d.tick(2);  // the reset, then the moves
  EXPECT_EQ(d.machine.pagesOf[pid][0].node, 0);
  EXPECT_EQ(d.machine.pagesOf[pid][1].node, 1);
  EXPECT_EQ(d.machine.pagesOf[pid][2].node, 0);
  std::set<double> toNodes;
  for (const Decision& x : d.log.history()) {
    if (x.event == "locality" && x.values.count("to_node") != 0) toNodes.insert(x.values.at("to_node"));
  }
  EXPECT_EQ(toNodes, (std::set<double>{0, 1}));
}

// Without the counters (QEMU) locality migration cannot tell who touches a page: it says
// so once and moves nothing.
TEST(EngineLocality, WithoutCountersSaysSoOnceAndMovesNothing) {
  EngineOptions o;
  o.localityPages = 4;
  testing::Driver d("default", {}, Topology::paper(), o);
  d.app("a", 1000, 400, 100);
  d.machine.freeBytes = {{0, 0}, {1, 256ULL << 20}, {2, 256ULL << 20}};
  d.machine.pagesOf[1000].push_back({0x100000, 1, 9});
  d.machine.accessed[0x100000] = {0x100000, 1, 9, false, false, 12};
  d.tick(3);
  EXPECT_EQ(d.machine.pagesOf[1000].front().node, 1);
  std::size_t noted = 0;
  for (const Decision& x : d.log.history()) noted += x.event == "locality";
  EXPECT_EQ(noted, 1U);
}

// The commands a service's socket gets when an app under replication starts on
// `topology` (the fake machine's nodes with the given free bytes, the app's pages on
// `homeNode`).
std::vector<std::string> replicateCommandsOnStart(const Topology& topology,
                                                  std::map<int, std::uint64_t> freeBytes,
                                                  int homeNode) {
  const std::string sock = "/tmp/pimcloud-agent-rep-" + std::to_string(getpid()) + ".sock";
  const int fd = bindDatagram(sock);
  EXPECT_GE(fd, 0);
  if (fd < 0) return {};
  EngineOptions o;
  o.replicateShared = true;
  testing::Driver e("default", {}, topology, o);
  e.machine.freeBytes = std::move(freeBytes);
  FakeAppModel m;
  m.load = 100;
  m.maxRpsHost = 300;
  m.maxRpsPim = 100;
  m.homeNode = homeNode;
  e.machine.addApp("a", 1000, m);
  e.engine->addApp(AppSpec{"a", 1e7, 300, 100, 4}, 1000, sock);
  e.tick(3);
  std::vector<std::string> got;
  char buf[64] = {};
  for (ssize_t n; (n = recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0;) {
    got.emplace_back(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  unlink(sock.c_str());
  return got;
}

// Replication beside a static placement: when the app starts, one replicate command per
// node with memory that its cores sit on (Default: every core; the host node here has
// no memory).
TEST(EngineLocality, ReplicationAsksForACopyOnEveryNodeOfTheAppsCores) {
  EXPECT_EQ(replicateCommandsOnStart(Topology::paper(),
                                     {{0, 0}, {1, 256ULL << 20}, {2, 256ULL << 20}},
                                     FakeAppModel{}.homeNode),
            (std::vector<std::string>{"replicate 1", "replicate 2"}));  // once each
}

// On a PIM-only system the replicate commands name the stacks' nodes (0 and 1), which
// the service's socket and the harness take, not the stacks' numbers (1 and 2).
TEST(EngineLocality, ReplicationOnAPimOnlySystemNamesTheStacksNodes) {
  Topology t = Topology::make(0, 2, 8);
  t.firstStackNode = 0;
  EXPECT_EQ(replicateCommandsOnStart(t, {{0, 256ULL << 20}, {1, 256ULL << 20}}, 0),
            (std::vector<std::string>{"replicate 0", "replicate 1"}));
}

}  // namespace
}  // namespace pimcloud
