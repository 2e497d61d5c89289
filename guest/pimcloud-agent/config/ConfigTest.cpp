#include "config/Config.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

namespace pimcloud {
namespace {

bool mentions(const ConfigResult& r, const std::string& what) {
  for (const std::string& e : r.errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(Config, FullExampleParses) {
  const auto r = parseConfig(R"({
    // comments are allowed
    "policy": "pimcloud-cores",
    "interval_ms": 100,
    "topology": {"host_cpus": [0,1,2,3], "stacks": [[4,5,6,7,8,9,10,11],[12,13,14,15,16,17,18,19]]},
    "slack": {"intervals": 5, "min_intervals": 2},
    "stability": {"tolerance": 0.1, "cores_intervals": [2,3], "pages_intervals": [3,8]},
    "options": {"eager_reclaim": false},
    "placement": {"static": "il", "reserve_mib": 32, "locality_pages": 512, "replicate": true},
    "apps": [{"name": "xapian", "qos_ms": 5, "max_rps_host": 2000, "max_rps_pim": 700, "threads": 20}],
    "be": {"cpu_max_fraction": 0.5},
    "cgroup": {"root": "/tmp/cg", "mode": "affinity"}
  })", "agent.json");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0]);
  const AgentConfig& c = *r.config;
  EXPECT_EQ(c.policy, "pimcloud-cores");
  EXPECT_FALSE(c.topology.fromSysfs);
  EXPECT_EQ(topologyFrom(c.topology).pimCoresOn(2), 8);
  EXPECT_EQ(c.params.minSamples, 2U);
  EXPECT_FALSE(c.params.eagerReclaim);
  EXPECT_EQ(c.staticPlacement, StaticPlacement::Interleave);
  EXPECT_EQ(c.engine.reserveBytes, 32ULL << 20);
  EXPECT_EQ(c.engine.localityPages, 512U);
  EXPECT_TRUE(c.engine.replicateShared);
  ASSERT_EQ(c.apps.size(), 1U);
  EXPECT_DOUBLE_EQ(c.apps[0].spec.qosNs, 5e6);
  EXPECT_FALSE(c.useCgroups);
  EXPECT_DOUBLE_EQ(c.engine.beQuota, 0.5);
}

TEST(Config, EachPolicyReadsItsOwnOptions) {
  const auto ams = parseConfig(R"({"policy": "ams", "options": {"host_min_r": 2.5,
    "be_core_type": "host"}, "apps": []})", "a.json");
  ASSERT_TRUE(ams.config) << (ams.errors.empty() ? "" : ams.errors[0]);
  EXPECT_DOUBLE_EQ(ams.config->params.amsHostMinR, 2.5);
  EXPECT_EQ(ams.config->params.amsBeType, CoreType::Host);
  const auto octopus = parseConfig(R"({"policy": "octopus-man",
    "options": {"order": ["b", "a"], "downsize_slack": 0.5}, "apps": []})", "o.json");
  ASSERT_TRUE(octopus.config);
  EXPECT_EQ(octopus.config->params.octopusOrder, (std::vector<std::string>{"b", "a"}));
  // Another policy's option, a bad value, options for a policy that takes none.
  const auto wrong = parseConfig(R"({"policy": "pimcloud", "options": {"host_min_r": 2},
    "apps": []})", "w.json");
  ASSERT_FALSE(wrong.config);
  EXPECT_NE(wrong.errors[0].find("options.host_min_r: pimcloud has no such option; it reads "
                                 "eager_reclaim"), std::string::npos) << wrong.errors[0];
  const auto bad = parseConfig(R"({"policy": "ams", "options": {"be_core_type": "gpu"},
    "apps": []})", "b.json");
  ASSERT_FALSE(bad.config);
  EXPECT_NE(bad.errors[0].find("options.be_core_type is \"gpu\"; use \"host\", \"pim\""),
            std::string::npos) << bad.errors[0];
  const auto none = parseConfig(R"({"policy": "default", "options": {"x": 1}, "apps": []})",
                                "d.json");
  ASSERT_FALSE(none.config);
  EXPECT_NE(none.errors[0].find("default takes no options"), std::string::npos);
}

TEST(Config, PoliciesDescribeThemselvesWithTheirOptions) {
  const auto j = PolicyRegistry::describe();
  std::map<std::string, nlohmann::json> byName;
  for (const auto& p : j["policies"]) byName[p["name"].get<std::string>()] = p;
  ASSERT_EQ(byName.size(), PolicyRegistry::names().size());
  EXPECT_EQ(byName.at("ams")["options"][0]["key"], "host_min_r");
  EXPECT_DOUBLE_EQ(byName.at("ams")["options"][0]["default"].get<double>(), 1.0);
  EXPECT_EQ(byName.at("pimcloud")["options"][0]["default"], true);
  EXPECT_TRUE(byName.at("default")["options"].empty());
}

TEST(Config, ErrorsNameTheFieldAndTheFix) {
  const auto r = parseConfig(R"({
    "policy": "pimclod",
    "interval_ms": "fast",
    "placement": {"static": "xx", "replicate": "yes"},
    "apps": [{"name": "a", "max_rps_host": 5}, {"name": "a", "qos_ms": 1}],
    "colour": 3,
    "hotness": "psychic",
    "hotness_shadow": "both",
    "topology": {"host_cpus": [0, 1], "stacks": [[1, 2]]}
  })", "agent.json");
  EXPECT_FALSE(r.config);
  EXPECT_TRUE(mentions(r, "field \"policy\": \"pimclod\" is not a policy; use one of:"));
  EXPECT_TRUE(mentions(r, "field \"interval_ms\": is \"fast\", expected a number"));
  EXPECT_TRUE(mentions(r, "field \"placement.static\": is \"xx\"; use \"ft\", \"cc\", \"il\", \"fast-preferred\""));
  EXPECT_TRUE(mentions(r, "field \"placement.replicate\": is \"yes\", expected true or false"));
  EXPECT_TRUE(mentions(r, "field \"apps[0].qos_ms\": missing"));
  EXPECT_TRUE(mentions(r, "give both max_rps_host and max_rps_pim"));
  EXPECT_TRUE(mentions(r, "\"a\" appears twice"));
  EXPECT_TRUE(mentions(r, "field \"colour\": unknown field"));
  EXPECT_TRUE(mentions(r, "CPU 1 is listed twice"));
  EXPECT_TRUE(mentions(r, "field \"hotness\": \"psychic\" is not a hotness source"));
  EXPECT_TRUE(mentions(r, "field \"hotness_shadow\": is \"both\", expected true or false"));
  for (const std::string& e : r.errors) EXPECT_EQ(e.rfind("agent.json: ", 0), 0U) << e;
}

// placement.first_stack, as exec --first-stack: 0 on a PIM-only system such as arch9.
TEST(Config, FirstStackIsZeroOrOne) {
  const auto byDefault = parseConfig(R"({"topology": "sysfs", "apps": []})", "a.json");
  ASSERT_TRUE(byDefault.config);
  EXPECT_EQ(byDefault.config->topology.firstStack, 1);
  const auto pimOnly =
      parseConfig(R"({"topology": "sysfs", "placement": {"first_stack": 0}, "apps": []})", "a.json");
  ASSERT_TRUE(pimOnly.config) << (pimOnly.errors.empty() ? "" : pimOnly.errors[0]);
  EXPECT_EQ(pimOnly.config->topology.firstStack, 0);
  for (const char* bad : {"2", "0.5", "\"0\"", "4294967296"}) {
    const auto r = parseConfig(std::string(R"({"placement": {"first_stack": )") + bad + "}}",
                               "b.json");
    EXPECT_FALSE(r.config) << bad;
    ASSERT_EQ(r.errors.size(), 1U) << bad;
    EXPECT_NE(r.errors[0].find("b.json: field \"placement.first_stack\": is "), std::string::npos)
        << r.errors[0];
    EXPECT_NE(r.errors[0].find("use 1 (host cores on node 0"), std::string::npos) << r.errors[0];
  }
  // Node 0 cannot hold both the host cores and the first stack.
  const auto both = parseConfig(R"({"topology": {"host_cpus": [0], "stacks": [[1], [2]]},
    "placement": {"first_stack": 0}})", "c.json");
  ASSERT_EQ(both.errors.size(), 1U);
  EXPECT_NE(both.errors[0].find("make host_cpus empty or first_stack 1"), std::string::npos)
      << both.errors[0];
  // A tiered placement needs a slow tier: on a PIM-only system node 0 is a stack.
  const auto tiered = parseConfig(R"({"topology": "sysfs", "apps": [],
    "placement": {"first_stack": 0, "static": "fast-preferred"}})", "d.json");
  ASSERT_EQ(tiered.errors.size(), 1U);
  EXPECT_NE(tiered.errors[0].find("d.json: field \"placement.static\": is \"fast-preferred\" "
                                  "with first_stack 0"), std::string::npos) << tiered.errors[0];
  const auto farTier = parseConfig(R"({"topology": "sysfs", "apps": [],
    "placement": {"first_stack": 0, "static": "fast-preferred", "slow_node": 2}})", "e.json");
  EXPECT_TRUE(farTier.config) << (farTier.errors.empty() ? "" : farTier.errors[0]);
}

TEST(Config, SyntaxErrorSaysWhere) {
  const auto r = parseConfig("{\"policy\": }", "bad.json");
  ASSERT_EQ(r.errors.size(), 1U);
  EXPECT_NE(r.errors[0].find("bad.json: not valid JSON"), std::string::npos);
  EXPECT_NE(r.errors[0].find("byte"), std::string::npos);
}

TEST(Config, MissingFileIsAnErrorNotACrash) {
  const auto r = loadConfig("/nonexistent/agent.json");
  ASSERT_EQ(r.errors.size(), 1U);
  EXPECT_NE(r.errors[0].find("check the path"), std::string::npos);
}

}  // namespace
}  // namespace pimcloud
