// Property tests: random load traces with churn, many seeds. Whatever happens, every CPU
// belongs to exactly one owner (an LC app or the BE pool), and PIMCloud keeps its rule.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/TestDriver.h"
#include "policy/Baselines.h"
#include "policy/PimCloud.h"
#include "policy/Rule.h"

namespace pimcloud {
namespace {

using testing::Driver;

void checkPartition(const Driver& d, const std::string& where) {
  std::multiset<int> seen;
  for (const auto& [name, cpus] : d.machine.appCpus) {
    if (d.machine.deadApps.count(name)) continue;
    seen.insert(cpus.begin(), cpus.end());
  }
  seen.insert(d.machine.beCpus.begin(), d.machine.beCpus.end());
  for (const Core& c : d.topology.cores) {
    ASSERT_EQ(seen.count(c.cpu), 1U) << "cpu " << c.cpu << " " << where;
  }
  ASSERT_EQ(seen.size(), d.topology.cores.size()) << where;
}

void randomTrace(const std::string& policy, unsigned seed, const Topology& topology) {
  Driver d(policy, {}, topology);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<std::string> live;
  int made = 0;
  auto arrive = [&] {
    const std::string name = "app" + std::to_string(made++);
    const double perPim = 50 + 150 * unit(rng);
    const double r = 0.25 + 4 * unit(rng);
    d.app(name, perPim * r, perPim, 100 + 1500 * unit(rng), 1 + made % topology.stacks);
    live.push_back(name);
  };
  const int initial = 2 + static_cast<int>(rng() % 4);
  for (int i = 0; i < initial; ++i) arrive();
  for (int step = 0; step < 300; ++step) {
    const double x = unit(rng);
    if (x < 0.01 && live.size() < 7) {
      arrive();
    } else if (x < 0.02 && live.size() > 1) {
      const std::size_t k = rng() % live.size();
      d.exit(live[k]);
      live.erase(live.begin() + static_cast<long>(k));
    } else if (x < 0.2 && !live.empty()) {
      d.machine.setLoad(live[rng() % live.size()], 50 + 2500 * unit(rng));
    } else if (x < 0.21 && !live.empty()) {
      d.machine.deadTids.insert(static_cast<int>(rng() % 8000));
    }
    d.tick();
    const std::string where = policy + " seed " + std::to_string(seed) + " step " +
                              std::to_string(step);
    checkPartition(d, where);
    if (auto* p = dynamic_cast<PimCloudPolicy*>(d.policy.get())) {
      ASSERT_TRUE(pimcloudRuleHolds(p->cores(), p->ranking())) << where;
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(Property, PimCloudNeverDoubleAllocatesOrLosesACore) {
  for (unsigned seed = 1; seed <= 150; ++seed) {
    randomTrace("pimcloud", seed, Topology::paper());
    if (HasFatalFailure()) return;
  }
}

TEST(Property, PimCloudAblationAndLargerSystem) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    randomTrace("pimcloud-cores", seed, Topology::paper());
    randomTrace("pimcloud", seed, Topology::make(8, 4, 8));
    if (HasFatalFailure()) return;
  }
}

TEST(Property, OctopusManNeverDoubleAllocatesOrLosesACore) {
  for (unsigned seed = 1; seed <= 80; ++seed) {
    randomTrace("octopus-man", seed, Topology::paper());
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace pimcloud
