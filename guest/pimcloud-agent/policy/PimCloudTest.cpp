#include "policy/PimCloud.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/TestDriver.h"
#include "policy/Rule.h"

namespace pimcloud {
namespace {

using testing::Driver;

PimCloudPolicy& pim(Driver& d) { return dynamic_cast<PimCloudPolicy&>(*d.policy); }

std::vector<const Decision*> events(const Driver& d, const std::string& event,
                                    const std::string& app = "") {
  std::vector<const Decision*> out;
  for (const Decision& x : d.log.history()) {
    if (x.event == event && (app.empty() || x.appName == app)) out.push_back(&x);
  }
  return out;
}

CoreCount countOf(Driver& d, const std::string& app) { return pim(d).cores().count(d.id(app)); }

int stackOfCpu(const Topology& t, int cpu) { return t.core(t.coreByCpu(cpu)).stack; }

std::vector<int> added(const Decision& x) {
  std::vector<int> v;
  std::set_difference(x.toCores.begin(), x.toCores.end(), x.fromCores.begin(), x.fromCores.end(),
                      std::back_inserter(v));
  return v;
}

TEST(PimCloudRule, HoldsOnlyWhenNoEarlierAppHasPimWhileALaterOneHasHost) {
  const Topology t = Topology::paper();
  CoreMap m(t);
  const std::vector<AppId> ranking{0, 1, 2};
  m.give(0, 0);   // app 0: host
  m.give(4, 1);   // app 1: PIM (stack 1)
  m.give(12, 2);  // app 2: PIM (stack 2)
  EXPECT_TRUE(pimcloudRuleHolds(m, ranking));
  m.give(1, 1);  // app 1 becomes the middle app (host + PIM)
  EXPECT_TRUE(pimcloudRuleHolds(m, ranking));
  m.give(2, 2);  // app 2 gets a host core while app 1 holds PIM: broken
  EXPECT_FALSE(pimcloudRuleHolds(m, ranking));
  m.give(2, kBePool);
  m.give(5, 0);  // app 0 holds PIM while app 1 holds host: broken
  EXPECT_FALSE(pimcloudRuleHolds(m, ranking));
}

TEST(PimCloudInitial, TwoAppsGoToHostAndStackOneWithResidentStacks) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 100, 2);   // R = 3
  d.app("friendly", 100, 200, 100, 1);  // R = 0.5
  d.tick();
  auto& p = pim(d);
  ASSERT_EQ(p.ranking().size(), 2U);
  EXPECT_EQ(p.ranking()[0], d.id("averse"));
  EXPECT_EQ(countOf(d, "averse").host, 4);
  EXPECT_EQ(countOf(d, "averse").pim, 0);
  EXPECT_EQ(p.residentStack(d.id("averse")), 2);  // group 1: resident stack M
  EXPECT_EQ(countOf(d, "friendly").pim, 8);
  EXPECT_EQ(p.pimOnForTest(d.id("friendly"), 1), 8);
  EXPECT_EQ(p.residentStack(d.id("friendly")), 1);
  EXPECT_EQ(d.machine.beCpus.size(), 8U);  // stack 2's cores: leftover to the BE pool
  for (int cpu : d.machine.beCpus) EXPECT_EQ(stackOfCpu(d.topology, cpu), 2);
}

TEST(PimCloudInitial, SixAppsMakeThreeGroupsOfTwo) {
  Driver d("pimcloud");
  const double r[6] = {8, 5, 3, 1, 0.5, 0.25};
  for (int i = 0; i < 6; ++i) d.app("a" + std::to_string(i), 100 * r[i], 100, 50);
  d.tick();
  auto& p = pim(d);
  for (int i = 0; i < 6; ++i) {
    const AppId id = d.id("a" + std::to_string(i));
    EXPECT_EQ(p.ranking()[static_cast<std::size_t>(i)], id);
    const CoreCount n = p.cores().count(id);
    if (i < 2) {
      EXPECT_EQ(n.host, 2) << i;
      EXPECT_EQ(p.residentStack(id), 2) << i;
    } else {
      EXPECT_EQ(n.pim, 4) << i;
      EXPECT_EQ(p.pimOnForTest(id, i < 4 ? 1 : 2), 4) << i;
      EXPECT_EQ(p.residentStack(id), i < 4 ? 1 : 2) << i;
    }
  }
  EXPECT_TRUE(d.machine.beCpus.empty());
}

TEST(PimCloudInitial, ThreeAppsOnePerGroupAndUnevenSplitLeavesCoresToBe) {
  Driver d("pimcloud", {}, Topology::make(5, 2, 8));
  d.app("x", 300, 100, 50);
  d.app("y", 200, 100, 50);
  d.app("z", 100, 100, 50);
  d.app("w", 50, 100, 50);
  d.tick();
  // ceil(4/3) = 2 apps per group: x,y share 5 host cores 2+2 (one to BE), z,w on stack 1.
  auto& p = pim(d);
  EXPECT_EQ(countOf(d, "x").host, 2);
  EXPECT_EQ(countOf(d, "y").host, 2);
  EXPECT_EQ(p.pimOnForTest(d.id("z"), 1), 4);
  EXPECT_EQ(p.pimOnForTest(d.id("w"), 1), 4);
  EXPECT_EQ(d.machine.beCpus.size(), 9U);  // 1 host + all of stack 2
}

TEST(PimCloudUpsize, TakesResidentStackPimFromBePoolThenRemoteFromLowerRApp) {
  Driver d("pimcloud");
  // averse: 4 host cores give 1200 RPS; friendly: 8 PIM cores give 1600 RPS, and at
  // 1100 RPS it needs all 8 (7 violate), so it keeps them with positive slack.
  d.app("averse", 300, 100, 1100, 2);
  d.app("friendly", 100, 200, 1100, 1);
  d.tick(80);
  ASSERT_EQ(countOf(d, "averse").host, 4);
  ASSERT_EQ(pim(d).pimOnForTest(d.id("friendly"), 1), 8);
  const std::size_t seen = d.log.history().size();
  d.machine.setLoad("averse", 1700);  // needs all of stack 2 and some of stack 1
  d.tick(80);
  std::vector<const Decision*> ups;
  for (std::size_t i = seen; i < d.log.history().size(); ++i) {
    const Decision& x = d.log.history()[i];
    if (x.event == "upsize" && x.appName == "averse") ups.push_back(&x);
  }
  ASSERT_GE(ups.size(), 2U);
  bool sawRemote = false;
  for (const Decision* x : ups) {
    const auto add = added(*x);
    ASSERT_EQ(add.size(), 1U) << x->reason;
    const int stack = stackOfCpu(d.topology, add[0]);
    ASSERT_NE(stack, 0) << "all host cores are already the app's";
    if (stack == 1) {
      // The BE pool has no stack-1 core: the lower-R app with slack gives one (eager).
      if (!sawRemote) {
        EXPECT_NE(x->reason.find("from friendly"), std::string::npos) << x->reason;
      }
      sawRemote = true;
    } else {
      EXPECT_FALSE(sawRemote) << "resident stack after remote: " << x->reason;
      EXPECT_NE(x->reason.find("from the BE pool"), std::string::npos) << x->reason;
    }
  }
  EXPECT_TRUE(sawRemote);
  EXPECT_EQ(pim(d).pimOnForTest(d.id("averse"), 2), 8);
  EXPECT_FALSE(events(d, "donate", "friendly").empty());
  EXPECT_TRUE(pimcloudRuleHolds(pim(d).cores(), pim(d).ranking()));
}

TEST(PimCloudUpsize, ResolvesAViolationAndSetsThresholdToTheSlack) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 1100, 2);  // 4 host cores are not enough at 1100 RPS
  d.app("friendly", 100, 200, 300, 1);
  d.tick(40);
  const auto resolved = events(d, "upsize-resolved", "averse");
  ASSERT_FALSE(resolved.empty());
  EXPECT_GE(*resolved.front()->slack, 0.0);
  EXPECT_GT(countOf(d, "averse").pim, 0);  // now the middle app
  const auto s = pim(d).slack(d.id("averse"));
  ASSERT_TRUE(s.has_value());
  EXPECT_GE(*s, 0);
}

TEST(PimCloudUpsize, HostCoreFirstEvenForAPimFriendlyApp) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 50, 2);
  d.app("friendly", 100, 200, 300, 1);
  d.tick(60);  // averse downsizes at low load: its host cores go to the BE pool
  ASSERT_LT(countOf(d, "averse").host, 4);
  const int friendlyHostBefore = countOf(d, "friendly").host;
  EXPECT_EQ(friendlyHostBefore, 0);
  d.machine.setLoad("friendly", 3000);  // far beyond stack 1 alone
  d.tick(10);
  const auto ups = events(d, "upsize", "friendly");
  ASSERT_FALSE(ups.empty());
  const auto add = added(*ups.front());
  ASSERT_EQ(add.size(), 1U);
  EXPECT_EQ(stackOfCpu(d.topology, add[0]), 0) << ups.front()->reason;
  EXPECT_TRUE(pimcloudRuleHolds(pim(d).cores(), pim(d).ranking()));
}

TEST(PimCloudDownsize, RevertsOnViolationAndRaisesThreshold) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 50, 2);
  // friendly on 8 PIM cores (1600 RPS): at 1000 RPS, 7 cores hold QoS (u=0.71) but
  // 6 do not (u=0.83 -> p99 = 15x service > QoS 10x).
  d.app("friendly", 100, 200, 1000, 1);
  d.tick(100);
  const auto reverts = events(d, "downsize-revert", "friendly");
  ASSERT_FALSE(reverts.empty());
  const Decision& r = *reverts.front();
  EXPECT_EQ(r.toCores.size(), r.fromCores.size() + 1);
  EXPECT_GT(pim(d).threshold(d.id("friendly")), 0.0);
  // The last downsize before the revert had this slack: it is the new threshold.
  const Decision* lastDown = nullptr;
  for (const Decision& x : d.log.history()) {
    if (&x == &r) break;
    if (x.event == "downsize" && x.appName == "friendly") lastDown = &x;
  }
  ASSERT_NE(lastDown, nullptr);
  EXPECT_GE(pim(d).threshold(d.id("friendly")), *lastDown->slack);
  // After the revert it settles with enough cores and does not fall below them again.
  EXPECT_GE(countOf(d, "friendly").total(), 7);
}

TEST(PimCloudChurn, NewAppIsRerankedAndTakesACoreFromItsNextNeighbour) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 100, 2);
  d.app("friendly", 100, 200, 100, 1);
  d.tick(2);
  const int friendlyBefore = countOf(d, "friendly").total();
  d.app("middle", 200, 200, 10);  // R = 1: between them
  d.tick();
  auto& p = pim(d);
  ASSERT_EQ(p.ranking().size(), 3U);
  EXPECT_EQ(p.ranking()[1], d.id("middle"));
  EXPECT_EQ(countOf(d, "middle").total(), 1);
  EXPECT_EQ(countOf(d, "friendly").total(), friendlyBefore - 1);  // rank i+1 gave it
  EXPECT_TRUE(pimcloudRuleHolds(p.cores(), p.ranking()));
  // Resident stack: the one with most free memory (stack 2 is emptier in the fake).
  EXPECT_GE(p.residentStack(d.id("middle")), 1);
}

TEST(PimCloudChurn, LastRankedNewcomerTakesFromThePreviousAppAndExitRecycles) {
  Driver d("pimcloud");
  d.app("averse", 300, 100, 100, 2);
  d.app("friendly", 100, 200, 100, 1);
  d.tick(2);
  const int friendlyBefore = countOf(d, "friendly").total();
  d.app("tiny", 10, 200, 10);  // lowest R: last in rank
  d.tick();
  auto& p = pim(d);
  EXPECT_EQ(p.ranking().back(), d.id("tiny"));
  EXPECT_EQ(countOf(d, "friendly").total(), friendlyBefore - 1);
  EXPECT_EQ(countOf(d, "tiny").pim, 1);
  const std::size_t beBefore = d.machine.beCpus.size();
  d.exit("averse");
  d.tick();
  EXPECT_EQ(p.ranking().size(), 2U);
  EXPECT_EQ(d.machine.beCpus.size(), beBefore + 4);
  EXPECT_FALSE(events(d, "exit", "averse").empty());
}

TEST(PimCloudOversubscription, IsSignalledOnceInTheLog) {
  Driver d("pimcloud");
  d.app("a", 300, 100, 100000, 2);
  d.app("b", 100, 200, 100000, 1);
  d.tick(200);
  EXPECT_FALSE(events(d, "oversubscribed").empty());
  EXPECT_LE(events(d, "oversubscribed", "a").size(), 2U);
  EXPECT_TRUE(d.machine.beCpus.empty());
}

TEST(PimCloudPreferenceOnly, NeverChangesCores) {
  Driver d("pimcloud-preference");
  d.app("averse", 300, 100, 5000, 2);
  d.app("friendly", 100, 200, 10, 1);
  d.tick(50);
  EXPECT_TRUE(events(d, "upsize").empty());
  EXPECT_TRUE(events(d, "downsize").empty());
  EXPECT_EQ(countOf(d, "averse").host, 4);
}

}  // namespace
}  // namespace pimcloud
