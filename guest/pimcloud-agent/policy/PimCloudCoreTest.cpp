// PIMCloud's adjustCore preferences through the policy's own API, with hand-made
// observations (no engine, no machine).
#include <gtest/gtest.h>

#include "policy/PimCloud.h"
#include "policy/Rule.h"

namespace pimcloud {
namespace {

AppSpec spec(const std::string& name, double r) {
  AppSpec s;
  s.name = name;
  s.qosNs = 1000;
  s.maxRpsHost = 100 * r;
  s.maxRpsPim = 100;
  return s;
}

struct Harness {
  Topology topology;
  PimCloudPolicy policy;
  std::int64_t t = 0;
  std::vector<Decision> out;
  explicit Harness(Topology t) : topology(std::move(t)), policy({&topology, {}}, PimCloudPolicy::Variant::Full) {}
  // One interval with these p99s (as fractions of QoS).
  void step(const std::map<AppId, double>& p99) {
    Observation o;
    o.tNs = ++t;
    for (const auto& [id, f] : p99) {
      IntervalStats s;
      s.p99Ns = 1000 * f;
      s.meanNs = 300 * f;
      s.count = 10;
      o.stats[id] = s;
    }
    policy.step(o, out);
    ASSERT_TRUE(pimcloudRuleHolds(policy.cores(), policy.ranking()));
  }
};

TEST(AdjustCoreUp, TakesFromTheLowerRAppWithTheLargestSlack) {
  Harness h(Topology::make(2, 1, 8));
  // N = 4, M = 1: groups of two. a, b one host core each; c, d four PIM cores each.
  h.policy.start({{0, spec("a", 4)}, {1, spec("b", 3)}, {2, spec("c", 1)}, {3, spec("d", 0.5)}},
                 {}, h.out);
  ASSERT_EQ(h.policy.cores().count(2).pim, 4);
  ASSERT_EQ(h.policy.cores().count(3).pim, 4);
  for (int i = 0; i < 3; ++i) h.step({{0, 1.0}, {1, 1.5}, {2, 0.7}, {3, 0.4}});
  // b violates; no host core is free or spare, so a PIM core from d (slack 0.6 > 0.3).
  EXPECT_EQ(h.policy.cores().count(1).pim, 1);
  EXPECT_EQ(h.policy.cores().count(3).pim, 3);
  bool upsize = false;
  for (const Decision& d : h.out) {
    if (d.event == "upsize") {
      upsize = true;
      EXPECT_NE(d.reason.find("from d"), std::string::npos) << d.reason;
    }
  }
  EXPECT_TRUE(upsize);
  // a, earlier in rank, may not take PIM while b holds host cores: the rule forbids it.
  EXPECT_EQ(h.policy.cores().count(0).pim, 0);
}

TEST(AdjustCoreDown, HostFirstThenRemotePimThenLocalPim) {
  Harness h(Topology::make(2, 2, 2));
  h.policy.start({{0, spec("a", 3)}}, {}, h.out);  // 2 host cores, resident stack 2
  ASSERT_EQ(h.policy.residentStack(0), 2);
  for (int i = 0; i < 40; ++i) h.step({{0, 1.5}});  // violating: grows to all 6 cores
  ASSERT_EQ(h.policy.cores().count(0).total(), 6);
  // Upsize order: after the host cores, stack 2 (resident) before stack 1 (remote).
  std::vector<int> upStacks;
  for (const Decision& d : h.out) {
    if (d.event != "upsize") continue;
    for (int cpu : d.toCores) {
      if (std::find(d.fromCores.begin(), d.fromCores.end(), cpu) == d.fromCores.end()) {
        upStacks.push_back(h.topology.core(h.topology.coreByCpu(cpu)).stack);
      }
    }
  }
  EXPECT_EQ(upStacks, (std::vector<int>{2, 2, 1, 1}));
  h.out.clear();
  for (int i = 0; i < 80; ++i) h.step({{0, 0.2}});  // lots of slack: shrinks to one core
  std::vector<std::string> removed;
  for (const Decision& d : h.out) {
    if (d.event != "downsize") continue;
    for (int cpu : d.fromCores) {
      if (std::find(d.toCores.begin(), d.toCores.end(), cpu) == d.toCores.end()) {
        const Core& c = h.topology.core(h.topology.coreByCpu(cpu));
        removed.push_back(c.type == CoreType::Host ? "host" : (c.stack == 2 ? "local" : "remote"));
      }
    }
  }
  EXPECT_EQ(removed, (std::vector<std::string>{"host", "host", "remote", "remote", "local"}));
  EXPECT_EQ(h.policy.cores().count(0).total(), 1);
  // Giving up a remote core sends its pages home and drops the stack's replicas.
  bool back = false;
  bool drop = false;
  for (const Decision& d : h.out) {
    for (const PlacementRequest& p : d.placement) {
      back |= p.kind == PlacementRequest::Kind::MigrateThreadBack && p.stack == 2;
      drop |= p.kind == PlacementRequest::Kind::DropReplicas && p.stack == 1;
    }
  }
  EXPECT_TRUE(back);
  EXPECT_TRUE(drop);
}

TEST(AdjustCoreUp, DynamicCoresAblationAsksForNoPageMovement) {
  Topology t = Topology::make(2, 2, 2);
  PimCloudPolicy p({&t, {}}, PimCloudPolicy::Variant::DynamicCores);
  std::vector<Decision> out;
  p.start({{0, spec("a", 3)}}, {}, out);
  for (int i = 0; i < 40; ++i) {
    Observation o;
    o.tNs = i;
    IntervalStats s;
    s.p99Ns = 1500;
    s.meanNs = 500;
    s.count = 10;
    o.stats[0] = s;
    p.step(o, out);
  }
  EXPECT_EQ(p.cores().count(0).total(), 6);
  for (const Decision& d : out) EXPECT_TRUE(d.placement.empty()) << d.event;
}

}  // namespace
}  // namespace pimcloud
