#include "policy/Interference.h"

#include <gtest/gtest.h>

#include "engine/TestDriver.h"

namespace pimcloud {
namespace {

using testing::Driver;

PolicyParams withSignal(const std::string& signal) {
  PolicyParams p;
  p.interference.signal = signal;
  return p;
}

// Every CPU's counters advance one interval at 1 GHz with misses that stayed `ns`
// outstanding each: the engine's seed-003 estimate of any app is then `ns`.
void missesOf(Driver& d, double ns) {
  for (const Core& c : d.topology.cores) {
    MissSample& m = d.machine.misses[c.cpu];
    m.cycles += 100'000'000;
    m.misses += 1000;
    m.outstandingCycles += static_cast<std::uint64_t>(1000 * ns);
  }
}

double quotaCores(const Driver& d) {
  return d.machine.beQuota * static_cast<double>(d.machine.beCpus.size());
}

const InterferencePolicy& policyOf(const Driver& d) {
  return dynamic_cast<const InterferencePolicy&>(*d.policy);
}

TEST(InterferencePolicy, LearnsTheThresholdWithTheBeThrottledThenAddsHalfCoresUntilAViolation) {
  Driver d("interference", withSignal("latency"));
  d.app("lc", 1000, 400, 500);
  missesOf(d, 100);
  d.tick();
  // The LC app holds the host cores; the BE jobs the PIM cores, fully throttled.
  EXPECT_EQ(d.machine.appCpus["lc"], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(d.machine.beCpus.size(), 16U);
  EXPECT_NEAR(quotaCores(d), InterferencePolicy::kFullyThrottledCores, 1e-9);
  for (int i = 0; i < 9; ++i) {
    missesOf(d, 90 + 2 * i);  // estimates 90..106 ns: mean 98
    d.tick();
  }
  EXPECT_TRUE(policyOf(d).learning());
  missesOf(d, 100);
  d.tick();
  EXPECT_FALSE(policyOf(d).learning());
  // (90 + 92 + ... + 106 + 100) / 10
  EXPECT_NEAR(policyOf(d).threshold(d.id("lc")), 98.2, 1e-6);
  EXPECT_NEAR(quotaCores(d), 1.0, 1e-9);
  for (int i = 0; i < 4; ++i) {
    missesOf(d, 95);  // below the threshold: +0.5 core each
    d.tick();
  }
  EXPECT_NEAR(quotaCores(d), 3.0, 1e-9);
  missesOf(d, 140);  // interference: back to one core at once
  d.tick();
  EXPECT_NEAR(quotaCores(d), 1.0, 1e-9);
  EXPECT_EQ(d.log.events().count("interference"), 1U);
  EXPECT_EQ(d.log.events().count("interference-threshold"), 1U);
  EXPECT_GE(d.log.events().at("be-quota"), 3U);
}

TEST(InterferencePolicy, QuotaStopsAtTheBePoolsSize) {
  Driver d("interference", withSignal("latency"));
  d.app("lc", 1000, 400, 500);
  for (int i = 0; i < 60; ++i) {
    missesOf(d, 100);
    d.tick();
  }
  EXPECT_NEAR(quotaCores(d), 16.0, 1e-9);
}

TEST(InterferencePolicy, ANewAppThrottlesTheBeAgainWhileItsThresholdIsLearnt) {
  Driver d("interference", withSignal("latency"));
  d.app("a", 1000, 400, 500);
  for (int i = 0; i < 15; ++i) {
    missesOf(d, 100);
    d.tick();
  }
  ASSERT_GT(quotaCores(d), 1.0);
  d.app("b", 1000, 400, 500);
  missesOf(d, 100);
  d.tick();
  EXPECT_TRUE(policyOf(d).learning());
  EXPECT_NEAR(quotaCores(d), InterferencePolicy::kFullyThrottledCores, 1e-9);
  EXPECT_EQ(d.machine.appCpus["a"].size(), 2U);  // the host cores split between a and b
  EXPECT_EQ(d.machine.appCpus["b"].size(), 2U);
}

TEST(InterferencePolicy, WithoutEstimatesItSaysSoAndHoldsTheBeAtItsFloor) {
  Driver d("interference", withSignal("latency"));
  d.app("lc", 1000, 400, 500);
  d.tick(45);  // no miss counters: QEMU
  EXPECT_EQ(d.log.events().count("backend-error"), 1U);
  EXPECT_FALSE(policyOf(d).learning());
  EXPECT_NEAR(quotaCores(d), 1.0, 1e-9);  // never raised: nothing says it is safe
}

TEST(InterferencePolicy, P99SignalRaisesTheQuotaWhileQosHoldsAndCutsItWhenItDoesNot) {
  Driver d("interference", withSignal("p99"));
  d.app("lc", 1000, 400, 500);  // 4 host cores for 500 RPS: far under QoS
  d.tick(5);
  EXPECT_GT(quotaCores(d), 2.0);
  d.machine.setLoad("lc", 3990);  // at capacity: p99 above QoS
  d.tick(2);
  EXPECT_NEAR(quotaCores(d), 1.0, 1e-9);
}

TEST(InterferencePolicy, NoControlLeavesTheBeUnlimited) {
  Driver d("interference", withSignal("none"));
  d.app("lc", 1000, 400, 500);
  d.tick(20);
  EXPECT_EQ(d.machine.beQuota, 0.0);
  EXPECT_EQ(d.log.events().count("be-quota"), 0U);
}

TEST(InterferencePolicy, OptionsAreCheckedWithTheirNames) {
  PolicyParams params;
  auto errors = PolicyRegistry::parseOptions(
      "interference", {{"signal", "counters"}, {"step_cores", 0}, {"learn_intervals", 2.5}}, params);
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_NE(errors[0].find("options.signal"), std::string::npos);
  EXPECT_NE(errors[1].find("options.learn_intervals is 2.5; give a whole number"), std::string::npos);
  EXPECT_NE(errors[2].find("options.step_cores"), std::string::npos);
  errors = PolicyRegistry::parseOptions("interference",
                                        {{"signal", "p99"}, {"learn_intervals", 5}}, params);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(params.interference.signal, "p99");
  EXPECT_EQ(params.interference.learnIntervals, 5);
}

}  // namespace
}  // namespace pimcloud
