#include "policy/Balm.h"

#include <gtest/gtest.h>

#include "engine/TestDriver.h"

namespace pimcloud {
namespace {

using testing::Driver;

constexpr int kBePid = 7000;

PolicyParams inMode(const std::string& mode) {
  PolicyParams p;
  p.balm.mode = mode;
  return p;
}

// A best-effort process with `n` pages on each stack (free memory everywhere).
void bestEffort(Driver& d, std::size_t n) {
  d.machine.bePidList = {kBePid};
  auto& pages = d.machine.pagesOf[kBePid];
  for (int node = 1; node <= 2; ++node) {
    for (std::size_t i = 0; i < n; ++i) {
      pages.push_back({0x10000000u + (static_cast<std::uintptr_t>(node) << 24) + i * 4096, node, 0});
    }
  }
  d.machine.freeBytes = {{1, 4ULL << 30}, {2, 4ULL << 30}};
}

std::size_t beOn(Driver& d, int node) {
  return d.machine.pagesPerNode(kBePid)[node];
}

int beLevel(const Driver& d) {
  const int cpu = d.machine.beCpus.front();
  const auto it = d.machine.throttle.find(cpu);
  return it == d.machine.throttle.end() ? 0 : it->second;
}

// kvstore at a tenth of its 4 host cores' capacity, then over it for `bad` intervals.
void violation(Driver& d, int bad) {
  d.machine.setLoad("lc", 4500);  // 4 host cores x 1000 RPS: overloaded, p99 > QoS
  d.tick(bad);
  d.machine.setLoad("lc", 400);
}

TEST(BalmPolicy, ThrottlesAtOnceThenMigratesAnIncrementPerLevelReleased) {
  Driver d("balm", inMode("balm"));
  d.app("lc", 1000, 400, 400);
  bestEffort(d, 100);
  d.tick(3);
  EXPECT_EQ(d.machine.appCpus["lc"], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(beLevel(d), 0);
  violation(d, 1);
  EXPECT_EQ(beLevel(d), 9);         // the most restrictive level, in the same interval
  EXPECT_EQ(beOn(d, 1), 100U);      // nothing moved yet
  d.tick();                          // quiet: one increment, one level released
  EXPECT_EQ(beLevel(d), 8);
  EXPECT_EQ(beOn(d, 1), 75U);        // a quarter of the BE pages on the LC stack
  EXPECT_EQ(beOn(d, 2), 125U);
  d.tick(3);
  EXPECT_EQ(beLevel(d), 5);
  EXPECT_LT(beOn(d, 1), 35U);
  d.tick(10);
  EXPECT_EQ(beLevel(d), 0);
  EXPECT_EQ(d.log.events().count("be-violation"), 1U);
  EXPECT_EQ(d.log.events().at("be-migrate"), 9U);  // one per level released
}

TEST(BalmPolicy, MbaOnlyReleasesLevelByLevelWithoutMovingPages) {
  Driver d("balm", inMode("mba"));
  d.app("lc", 1000, 400, 400);
  bestEffort(d, 100);
  d.tick(2);
  violation(d, 2);
  EXPECT_EQ(beLevel(d), 9);
  d.tick(4);
  EXPECT_EQ(beLevel(d), 5);
  EXPECT_EQ(beOn(d, 1), 100U);
  EXPECT_EQ(d.log.events().count("be-migrate"), 0U);
}

TEST(BalmPolicy, PgmOnlyMovesAnIncrementPerViolatingIntervalAndNeverThrottles) {
  Driver d("balm", inMode("pgm"));
  d.app("lc", 1000, 400, 400);
  bestEffort(d, 100);
  d.tick(2);
  violation(d, 2);
  EXPECT_EQ(beLevel(d), 0);
  EXPECT_EQ(beOn(d, 1), 56U);  // 100 - 25, then 75 - 19 (a quarter, rounded up)
  d.tick(5);
  EXPECT_EQ(beOn(d, 1), 56U);  // quiet: nothing more moves
}

TEST(BalmPolicy, UnsharedKeepsTheBePagesOffTheLcStackFromTheStart) {
  Driver d("balm", inMode("unshared"));
  d.app("lc", 1000, 400, 400);
  bestEffort(d, 100);
  d.tick(2);
  EXPECT_EQ(beOn(d, 1), 0U);
  EXPECT_EQ(beOn(d, 2), 200U);
  EXPECT_EQ(beLevel(d), 0);
}

// A PIM-only system (stack 1 on node 0): the LC stack's pages are found on node 0 and
// go to the BE stack's node, 1.
TEST(BalmPolicy, UnsharedMovesBetweenTheStacksNodesOnAPimOnlySystem) {
  Topology t = Topology::make(0, 2, 8);
  t.firstStackNode = 0;
  Driver d("balm", inMode("unshared"), t);
  d.app("lc", 1000, 400, 400, 0);
  d.machine.bePidList = {kBePid};
  auto& pages = d.machine.pagesOf[kBePid];
  for (int node = 0; node <= 1; ++node) {
    for (std::size_t i = 0; i < 100; ++i) {
      pages.push_back({0x10000000u + (static_cast<std::uintptr_t>(node) << 24) + i * 4096, node, 0});
    }
  }
  d.machine.freeBytes = {{0, 4ULL << 30}, {1, 4ULL << 30}};
  d.tick(2);
  EXPECT_EQ(beOn(d, 0), 0U);
  EXPECT_EQ(beOn(d, 1), 200U);
}

TEST(BalmPolicy, OptionsAreCheckedWithTheirNames) {
  PolicyParams params;
  auto errors = PolicyRegistry::parseOptions("balm", {{"mode", "mba-only"}}, params);
  ASSERT_EQ(errors.size(), 1U);
  EXPECT_NE(errors[0].find("options.mode"), std::string::npos);
  errors = PolicyRegistry::parseOptions("balm", {{"mode", "pgm"}, {"step_fraction", 0.5}}, params);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(params.balm.mode, "pgm");
  EXPECT_DOUBLE_EQ(params.balm.stepFraction, 0.5);
}

}  // namespace
}  // namespace pimcloud
