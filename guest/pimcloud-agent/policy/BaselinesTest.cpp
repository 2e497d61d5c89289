#include "policy/Baselines.h"

#include <gtest/gtest.h>

#include "engine/TestDriver.h"

namespace pimcloud {
namespace {

using testing::Driver;

std::vector<int> cpusOfType(const Topology& t, CoreType type) {
  std::vector<int> v;
  for (const Core& c : t.cores) {
    if (c.type == type) v.push_back(c.cpu);
  }
  return v;
}

TEST(Registry, KnowsEveryPolicyAndAblation) {
  const auto names = PolicyRegistry::names();
  for (const char* n : {"pimcloud", "pimcloud-cores", "pimcloud-preference", "default", "ams",
                        "octopus-man"}) {
    EXPECT_EQ(names.count(n), 1U) << n;
  }
  PolicyContext ctx{nullptr, {}};
  EXPECT_EQ(PolicyRegistry::create("no-such-policy", ctx), nullptr);
}

TEST(DefaultPolicy, EveryAppAndTheBeJobShareEveryCore) {
  Driver d("default");
  d.app("a", 300, 100, 5000);
  d.app("b", 100, 200, 5000);
  d.tick(20);
  ASSERT_EQ(d.machine.appCpus["a"].size(), 20U);
  EXPECT_EQ(d.machine.appCpus["a"], d.machine.appCpus["b"]);
  EXPECT_EQ(d.machine.beCpus.size(), 20U);
  EXPECT_EQ(d.log.events().count("upsize"), 0U);
}

TEST(AmsPolicy, StaticPreferenceSharedWithinATypeAndFixed) {
  Driver d("ams");
  d.app("averse", 300, 100, 5000);   // R = 3: host
  d.app("averse2", 200, 100, 5000);  // R = 2: host, shared with averse
  d.app("friendly", 100, 200, 10);   // R = 0.5: PIM
  d.tick(30);
  const auto host = cpusOfType(d.topology, CoreType::Host);
  const auto pim = cpusOfType(d.topology, CoreType::Pim);
  EXPECT_EQ(d.machine.appCpus["averse"], host);
  EXPECT_EQ(d.machine.appCpus["averse2"], host);
  EXPECT_EQ(d.machine.appCpus["friendly"], pim);
  EXPECT_EQ(d.machine.beCpus, pim);  // the BE job prefers PIM by default
  EXPECT_EQ(d.log.events().count("upsize"), 0U);
}

TEST(OctopusManPolicy, SmallCoresFirstThenBigCoresNeverBoth) {
  Driver d("octopus-man");
  d.app("a", 300, 100, 1500);  // beyond 16 small cores with remote penalty? climbs to big
  d.tick(200);
  auto& p = dynamic_cast<OctopusManPolicy&>(*d.policy);
  const CoreCount n = p.cores().count(d.id("a"));
  EXPECT_TRUE(n.host == 0 || n.pim == 0) << n.host << " host + " << n.pim << " pim";
  // It went through small cores first.
  bool sawSmall = false;
  bool sawBig = false;
  for (const Decision& x : d.log.history()) {
    if (x.event != "upsize") continue;
    if (x.reason.find("small") != std::string::npos) {
      EXPECT_FALSE(sawBig);
      sawSmall = true;
    } else {
      sawBig = true;
    }
  }
  EXPECT_TRUE(sawSmall);
  EXPECT_TRUE(sawBig);
  EXPECT_GT(n.host, 0);
}

TEST(OctopusManPolicy, ServesAppsInTheGivenOrder) {
  PolicyParams params;
  params.octopusOrder = {"second", "first"};
  Driver d("octopus-man", params);
  d.app("first", 100, 100, 10);
  d.app("second", 100, 100, 10);
  d.tick();
  auto& p = dynamic_cast<OctopusManPolicy&>(*d.policy);
  ASSERT_EQ(p.order().size(), 2U);
  EXPECT_EQ(p.order()[0], d.id("second"));
}

}  // namespace
}  // namespace pimcloud
