// The manager under churn and faults (issue: app exit and arrival, full stacks, partial
// migrations): exit noticed within one interval whatever the cause, pages booked from
// what moved, every page move bounded by the interval's budget and the reserve.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "engine/TestDriver.h"
#include "policy/PimCloud.h"

namespace pimcloud {
namespace {

using testing::Driver;

std::vector<Decision> eventsOf(const Driver& d, const std::string& event, const std::string& app) {
  std::vector<Decision> out;
  for (const Decision& x : d.log.history()) {
    if (x.event == event && x.appName == app) out.push_back(x);
  }
  return out;
}

std::size_t pagesOn(const Driver& d, int pid, int node) {
  std::size_t n = 0;
  for (const PageInfo& p : d.machine.pagesOf.at(pid)) n += p.node == node;
  return n;
}

// The engine of `d` again, with `options` and the fake machine's clock as its host time
// (FakeMachine::nsPerPageMoved then sets what a page move costs the budget).
void onFakeClock(Driver& d, EngineOptions options) {
  options.clock = [&d] { return d.machine.clockNs; };
  d.engine = std::make_unique<Engine>(d.topology, *d.policy, d.machine, d.source, d.log, nullptr,
                                      options);
}

TEST(EngineChurn, AKilledAppIsNoticedWithinOneIntervalAndItsCoresGoToTheSurvivor) {
  Driver d("pimcloud");
  d.app("imgdnn", 100, 200, 300, 1);
  d.app("kvstore", 300, 150, 300, 2);
  d.tick(10);
  const std::vector<int> deadCores = d.machine.appCpus.at("imgdnn");
  ASSERT_FALSE(deadCores.empty());
  // SIGKILL: no exit line from the harness, only the process is gone.
  d.machine.deadApps.insert("imgdnn");
  d.tick(1);
  const auto exits = eventsOf(d, "exit", "imgdnn");
  ASSERT_EQ(exits.size(), 1U);
  EXPECT_EQ(exits[0].tNs, d.tNs) << "the exit is logged in the first interval after it";
  EXPECT_NE(exits[0].reason.find("exited"), std::string::npos) << exits[0].reason;
  EXPECT_EQ(d.machine.released, std::vector<std::string>{"imgdnn"});
  for (int cpu : deadCores) {
    EXPECT_NE(std::find(d.machine.beCpus.begin(), d.machine.beCpus.end(), cpu),
              d.machine.beCpus.end())
        << "cpu " << cpu << " back in the BE pool";
  }
  // The survivor, overloaded, takes the recycled cores from the BE pool.
  d.machine.setLoad("kvstore", 2200);  // more than host + stack 2 give at QoS
  d.tick(200);
  const auto& mine = d.machine.appCpus.at("kvstore");
  const bool tookOne = std::any_of(deadCores.begin(), deadCores.end(), [&](int cpu) {
    return std::find(mine.begin(), mine.end(), cpu) != mine.end();
  });
  EXPECT_TRUE(tookOne);
  EXPECT_LT(d.machine.sample("kvstore", d.tNs).p99Ns, 10 * 1e6) << "QoS regained";
  EXPECT_TRUE(eventsOf(d, "exit", "kvstore").empty());
}

TEST(EngineChurn, AnAppThatEndsNormallyIsLoggedOnceAndItsLastLinesAreNotUnknown) {
  Driver d("pimcloud");
  d.app("a", 300, 100, 100, 2);
  d.app("b", 100, 200, 100, 1);
  d.tick(5);
  d.exit("b");  // the harness's exit line and the process gone in the same interval
  d.tick(3);
  EXPECT_EQ(eventsOf(d, "exit", "b").size(), 1U);
  for (const Decision& x : d.log.history()) {
    EXPECT_EQ(x.reason.find("unknown app"), std::string::npos) << x.reason;
  }
}

TEST(EngineMigration, NothingToGatherCostsOneNumaMapsReadNotAPageWalk) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 100, 2, 500);  // its pages on its resident stack already
  d.app("friendly", 100, 200, 100, 1, 500);
  d.tick(3);
  EXPECT_EQ(d.machine.hotPagesCalls, 0);
  EXPECT_GE(d.machine.pagesPerNodeCalls, 2);
  const auto c = eventsOf(d, "concentrate", "averse");
  ASSERT_EQ(c.size(), 1U);
  EXPECT_EQ(c[0].pagesMoved, 0U);
}

TEST(EngineChurn, AnAppArrivingMidRunIsRankedAndTakesACore) {
  Driver d("pimcloud");
  d.app("a", 300, 100, 100, 2);
  d.app("b", 100, 200, 100, 1);
  d.tick(10);
  d.app("c", 200, 200, 100, 1);
  d.tick(2);
  EXPECT_EQ(eventsOf(d, "arrive", "c").size(), 1U);
  EXPECT_FALSE(d.machine.appCpus.at("c").empty());
  auto& p = dynamic_cast<PimCloudPolicy&>(*d.policy);
  EXPECT_EQ(p.ranking().size(), 3U);
}

TEST(EngineChurn, AConfiguredAppThatArrivesLaterEntersWhenItGoesLive) {
  Driver d("pimcloud");
  d.app("a", 300, 100, 100, 2);
  d.app("b", 100, 200, 100, 1);
  AppSpec late;
  late.name = "late";
  late.qosNs = 10e6;
  late.maxRpsHost = 200;
  late.maxRpsPim = 200;
  late.threads = 4;
  d.engine->addApp(late, 0, "", /*arrives=*/true);
  d.tick(5);
  auto& p = dynamic_cast<PimCloudPolicy&>(*d.policy);
  EXPECT_EQ(p.ranking().size(), 2U) << "not managed before it starts";
  EXPECT_EQ(d.machine.appCpus.count("late"), 0U);
  FakeAppModel m;
  m.load = 100;
  m.maxRpsHost = m.maxRpsPim = 200;
  d.machine.addApp("late", 4242, m);
  d.source.start("late", 10e6, 200, 200);  // its first line carries its pid
  d.tick(1);
  EXPECT_EQ(p.ranking().size(), 3U);
  EXPECT_EQ(eventsOf(d, "arrive", "late").size(), 1U);
  EXPECT_EQ(d.machine.appPids.at("late"), 4242);
}

// A remote core's pages move onto a stack that fills part way: only the pages that moved
// are booked, and only those come back when the core goes.
TEST(EngineMigration, PartialMoveBooksWhatMovedAndMovesBackOnlyThose) {
  Topology small = Topology::make(4, 2, 8, 8ULL << 20);
  EngineOptions opts;
  opts.reserveBytes = 0;
  Driver e("pimcloud", {}, small, opts);
  e.app("averse", 300, 100, 100, 2);
  e.app("friendly", 100, 200, 100, 1, 1800, 1);
  e.tick(60);
  // The stack looks roomy when planned, but the kernel finds it full after 40 pages.
  e.machine.setLoad("averse", 50);
  e.machine.setLoad("friendly", 2000);
  e.machine.freeBytes[2] = 40 * FakeMachine::kPageBytes;
  e.tick(60);
  const std::size_t moved = pagesOn(e, 1001, 2);
  EXPECT_GT(moved, 0U);
  EXPECT_LE(moved, 40U);
  std::uint64_t forward = 0;
  for (const Decision& x : e.log.history()) {
    if (x.appName == "friendly" && x.event != "downsize") forward += x.pagesMoved;
  }
  EXPECT_EQ(forward, moved) << "booked pages are the pages that moved";
  // Load falls: the remote cores go, and exactly the moved pages come back.
  e.machine.setLoad("friendly", 100);
  e.tick(300);
  EXPECT_EQ(pagesOn(e, 1001, 2), 0U);
  std::uint64_t total = 0;
  for (const Decision& x : e.log.history()) {
    if (x.appName == "friendly") total += x.pagesMoved;
  }
  EXPECT_EQ(total, 2 * moved) << "nothing booked for pages that never left";
}

TEST(EngineMigration, ASecondRemoteCoreDoesNotTakePagesQueuedForTheFirst) {
  EngineOptions opts;
  opts.migrationBudgetNs = 1;  // one chunk per interval: the first core's pages queue up
  opts.migrationChunkPages = 64;
  Driver e("pimcloud", {}, Topology::paper(), opts);
  onFakeClock(e, opts);
  e.machine.nsPerPageMoved = 1;
  e.remotePimCoreApps();
  e.overloadFriendly(60, 200);
  // Every page booked moved exactly once: the log's total is the pages now on stack 2.
  std::uint64_t booked = 0;
  for (const Decision& x : e.log.history()) {
    if (x.appName == "friendly") booked += x.pagesMoved;
  }
  EXPECT_GT(booked, 0U);
  EXPECT_EQ(booked, pagesOn(e, 1001, 2));
}

TEST(EngineMigration, GatherIsSpreadOverIntervalsWithinTheBudgetAndFinishes) {
  EngineOptions opts;
  opts.migrationBudgetNs = 10'000'000;  // 10 ms of host time per interval
  opts.migrationChunkPages = 100;
  Driver d("pimcloud", {}, Topology::paper(), opts);
  onFakeClock(d, opts);
  d.machine.nsPerPageMoved = 20'000;  // 100 pages = 2 ms: five chunks per interval
  d.app("averse", 300, 100, 100, 1, 3000);  // 3000 pages on stack 1, resident stack 2
  d.app("friendly", 100, 200, 100, 1);
  d.tick(1);
  const auto first = eventsOf(d, "concentrate", "averse");
  ASSERT_EQ(first.size(), 1U);
  EXPECT_EQ(first[0].pagesMoved, 500U) << first[0].reason;
  EXPECT_NE(first[0].reason.find("2500 pages left for the next intervals"), std::string::npos)
      << first[0].reason;
  d.tick(10);
  EXPECT_EQ(pagesOn(d, 1000, 2), 3000U);
  std::uint64_t later = 0;
  for (const Decision& x : eventsOf(d, "migrate", "averse")) later += x.pagesMoved;
  EXPECT_EQ(later, 2500U);
  EXPECT_NE(eventsOf(d, "migrate", "averse").back().reason.find("done"), std::string::npos);
}

TEST(EngineMigration, ReserveEnomemAndEbusyReadDifferently) {
  // Reserve: the gather stops before the stack's last 64 MiB.
  {
    Driver d("pimcloud");
    d.app("averse", 300, 100, 100, 1, 50);
    d.app("friendly", 100, 200, 100, 1);
    d.machine.freeBytes[2] = 64ULL << 20;  // exactly the reserve
    d.tick(2);
    const auto c = eventsOf(d, "concentrate", "averse");
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].pagesMoved, 0U);
    EXPECT_NE(c[0].reason.find("at its reserve"), std::string::npos) << c[0].reason;
    EXPECT_EQ(c[0].reason.find("ENOMEM"), std::string::npos) << c[0].reason;
  }
  // ENOMEM: the kernel finds the stack full although free memory said otherwise.
  {
    EngineOptions opts;
    opts.reserveBytes = 0;
    Driver d("pimcloud", {}, Topology::paper(), opts);
    d.app("averse", 300, 100, 100, 1, 50);
    d.app("friendly", 100, 200, 100, 1);
    d.machine.freeBytes[2] = 10 * FakeMachine::kPageBytes;
    d.machine.unusableBytes[2] = 100 * FakeMachine::kPageBytes;
    d.tick(2);
    const auto c = eventsOf(d, "concentrate", "averse");
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].pagesMoved, 10U);
    EXPECT_NE(c[0].reason.find("ENOMEM"), std::string::npos) << c[0].reason;
  }
  // EBUSY: busy pages stay, the rest moves, and the log says how many.
  {
    Driver d("pimcloud");
    d.app("averse", 300, 100, 100, 1, 50);
    d.app("friendly", 100, 200, 100, 1);
    for (int i = 0; i < 3; ++i) d.machine.busyPages.insert(0x10000000 + i * FakeMachine::kPageBytes);
    d.tick(2);
    const auto c = eventsOf(d, "concentrate", "averse");
    ASSERT_EQ(c.size(), 1U);
    EXPECT_EQ(c[0].pagesMoved, 47U);
    EXPECT_NE(c[0].reason.find("3 pages busy (EBUSY)"), std::string::npos) << c[0].reason;
  }
}

TEST(EngineMigration, AnAppThatExitsMidGatherDropsItsQueuedMoves) {
  EngineOptions opts;
  opts.migrationChunkPages = 10;
  opts.migrationBudgetNs = 1;  // one chunk per interval
  Driver d("pimcloud", {}, Topology::paper(), opts);
  onFakeClock(d, opts);
  d.machine.nsPerPageMoved = 1;
  d.app("averse", 300, 100, 100, 1, 100);
  d.app("friendly", 100, 200, 100, 1);
  d.tick(3);
  const std::size_t before = pagesOn(d, 1000, 2);
  EXPECT_EQ(before, 30U);
  d.machine.deadApps.insert("averse");
  d.tick(3);
  EXPECT_EQ(pagesOn(d, 1000, 2), before);
  EXPECT_EQ(eventsOf(d, "exit", "averse").size(), 1U);
}

}  // namespace
}  // namespace pimcloud

namespace pimcloud {
namespace {

TEST(EngineLoop, TheSummaryNamesTheLargestGapBetweenIntervals) {
  std::int64_t host = 0;
  EngineOptions opts;
  opts.clock = [&host] { return host; };
  testing::Driver d("pimcloud", {}, Topology::paper(), opts);
  d.app("a", 300, 100, 100, 2);
  for (int i = 0; i < 10; ++i) {
    host += i == 6 ? 450'000'000 : 100'000'000;  // one interval began 350 ms late
    d.tick(1);
  }
  const auto summary = nlohmann::json::parse(d.log.summaryJson("pimcloud"));
  EXPECT_DOUBLE_EQ(summary["interval_gap_max_ms"].get<double>(), 450.0);
  EXPECT_EQ(summary["interval_gap_max_at_ns"].get<std::int64_t>(), 7 * 100'000'000LL);
}

}  // namespace
}  // namespace pimcloud
