// The engine on its own: a scripted stub policy says what to do and when, and the tests
// check that the engine carries it out (cores through the Machine, every decision
// logged, the policy told of exits, the loop going on when an app vanishes). The real
// policies' own behaviour is tested beside them (policy/*Test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/FakeMachine.h"
#include "engine/DecisionLog.h"
#include "engine/Engine.h"

namespace pimcloud {
namespace {

// Each step k runs script[k] (if any): it may change the assignment and emit decisions.
class ScriptedPolicy : public Policy {
 public:
  using Step = std::function<void(ScriptedPolicy&, const Observation&, std::vector<Decision>&)>;
  std::map<int, Step> script;
  Assignment current;
  std::vector<std::string> calls;  // "start", "step", "arrive NAME", "exit ID"
  int steps = 0;

  std::string name() const override { return "scripted"; }
  void start(const std::map<AppId, AppSpec>& apps, const Observation&,
             std::vector<Decision>& out) override {
    calls.push_back("start");
    int cpu = 4;
    for (const auto& [id, spec] : apps) {
      current.appCpus[id] = {cpu, cpu + 1};
      Decision d;
      d.event = "initial";
      d.app = id;
      d.appName = spec.name;
      d.toCores = current.appCpus[id];
      d.reason = "scripted";
      out.push_back(d);
      cpu += 2;
    }
    current.beCpus = {12, 13};
  }
  void arrive(AppId, const AppSpec& spec, const Observation&, std::vector<Decision>&) override {
    calls.push_back("arrive " + spec.name);
  }
  void exit(AppId app, std::int64_t, std::vector<Decision>&) override {
    calls.push_back("exit " + std::to_string(app));
    current.appCpus.erase(app);
  }
  void step(const Observation& now, std::vector<Decision>& out) override {
    calls.push_back("step");
    auto it = script.find(steps++);
    if (it != script.end()) it->second(*this, now, out);
  }
  Assignment assignment() const override { return current; }
};

struct StubDriver {
  Topology topology = Topology::paper();
  FakeMachine machine{topology};
  FakeLatencySource source{machine};
  DecisionLog log;
  ScriptedPolicy policy;
  Engine engine{topology, policy, machine, source, log, nullptr, EngineOptions{}};
  std::int64_t tNs = 0;

  void app(const std::string& name, int pid) {
    FakeAppModel m;
    m.load = 1000;
    m.maxRpsHost = 5000;
    m.maxRpsPim = 2000;
    machine.addApp(name, pid, m, 2, 0);
    source.start(name, 10 * m.serviceNs, m.maxRpsHost, m.maxRpsPim, 2);
    AppSpec spec;
    spec.name = name;
    spec.qosNs = 10 * m.serviceNs;
    spec.maxRpsHost = m.maxRpsHost;
    spec.maxRpsPim = m.maxRpsPim;
    engine.addApp(spec, pid);
  }
  void tick(int n = 1) {
    for (int i = 0; i < n; ++i) {
      tNs += 100'000'000;
      source.setTime(tNs);
      engine.tick(tNs);
    }
  }
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    for (const Decision& d : log.history()) out.push_back(d.event + " " + d.appName);
    return out;
  }
};

TEST(EngineWithStubPolicy, CarriesOutTheScriptedAssignmentAndLogsIt) {
  StubDriver d;
  d.app("a", 100);
  d.app("b", 200);
  d.policy.script[1] = [](ScriptedPolicy& p, const Observation& now, std::vector<Decision>& out) {
    const AppId a = p.current.appCpus.begin()->first;
    p.current.appCpus[a] = {4, 5, 14};
    Decision dec;
    dec.tNs = now.tNs;
    dec.event = "upsize";
    dec.app = a;
    dec.appName = "a";
    dec.fromCores = {4, 5};
    dec.toCores = {4, 5, 14};
    dec.reason = "scripted upsize";
    out.push_back(dec);
  };
  d.tick(3);
  EXPECT_EQ(d.machine.appCpus.at("a"), (std::vector<int>{4, 5, 14}));
  EXPECT_EQ(d.machine.appCpus.at("b"), (std::vector<int>{6, 7}));
  EXPECT_EQ(d.machine.beCpus, (std::vector<int>{12, 13}));
  const auto events = d.events();
  EXPECT_NE(std::find(events.begin(), events.end(), "upsize a"), events.end());
  EXPECT_EQ(std::count(events.begin(), events.end(), "initial a"), 1);
  EXPECT_EQ(d.policy.calls.front(), "start");
}

TEST(EngineWithStubPolicy, TellsThePolicyOfAnExitAndGoesOn) {
  StubDriver d;
  d.app("a", 100);
  d.app("b", 200);
  d.tick(2);
  const AppId b = d.engine.idOf("b");
  d.machine.deadApps.insert("b");  // its process is gone
  d.machine.removeApp("b");
  d.source.exit("b");
  d.tick(3);
  EXPECT_NE(std::find(d.policy.calls.begin(), d.policy.calls.end(),
                      "exit " + std::to_string(b)),
            d.policy.calls.end());
  EXPECT_NE(std::find(d.machine.released.begin(), d.machine.released.end(), "b"),
            d.machine.released.end());
  const int stepsAfter = static_cast<int>(std::count(d.policy.calls.begin(),
                                                     d.policy.calls.end(), "step"));
  EXPECT_GE(stepsAfter, 3) << "the loop stopped after the exit";
  EXPECT_EQ(d.machine.appCpus.at("a"), (std::vector<int>{4, 5}));
}

}  // namespace
}  // namespace pimcloud

namespace pimcloud {
namespace {

// The board's counters through the engine: a per-app latency estimate every interval
// from the CPUs the app held (seed 003), and the BE throttle as a logged backend action.
TEST(EngineWithCounters, LogsEachAppsLatencyEstimateFromItsCpusCounters) {
  StubDriver d;
  d.app("a", 100);  // the scripted policy gives a CPUs 4 and 5
  d.app("b", 200);  // and b 6 and 7
  // Every 100 ms: a CPU at 2 GHz counts 2e8 cycles; a's CPUs 1000 misses of 200 cycles
  // (100 ns) each, b's 10 misses of 600 cycles (300 ns).
  for (int k = 1; k <= 4; ++k) {
    for (int cpu = 0; cpu < 20; ++cpu) {
      const bool isA = cpu == 4 || cpu == 5;
      const std::uint64_t per = isA ? 1000 : 10;
      const std::uint64_t cycles = isA ? 200 : 600;
      d.machine.misses[cpu] = {per * k, per * cycles * k, 200'000'000ULL * k};
    }
    d.tick();
  }
  std::vector<double> a, b;
  for (const Decision& x : d.log.history()) {
    if (x.event != "latency-estimate") continue;
    (x.appName == "a" ? a : b).push_back(x.values.at("estimate_ns"));
    if (x.appName == "a") {
      EXPECT_DOUBLE_EQ(x.values.at("misses"), 2000);
    }
  }
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  for (double ns : a) EXPECT_NEAR(ns, 100.0, 1e-6);
  for (double ns : b) EXPECT_NEAR(ns, 300.0, 1e-6);
  // The JSON line carries the values.
  EXPECT_NE(decisionToJson(d.log.history().back()).find("\"values\""), std::string::npos);
}

TEST(EngineWithCounters, NoCountersNoEstimates) {
  StubDriver d;
  d.app("a", 100);
  d.tick(4);
  for (const Decision& x : d.log.history()) EXPECT_NE(x.event, "latency-estimate");
}

TEST(EngineWithCounters, BeThrottleIsSetLoggedAndReleasedWithTheCpus) {
  StubDriver d;
  d.app("a", 100);
  d.policy.script[1] = [](ScriptedPolicy& p, const Observation&, std::vector<Decision>&) {
    p.current.beThrottle = 7;
  };
  d.policy.script[3] = [](ScriptedPolicy& p, const Observation&, std::vector<Decision>&) {
    p.current.beCpus = {13};  // CPU 12 leaves the BE pool
  };
  d.policy.script[5] = [](ScriptedPolicy& p, const Observation&, std::vector<Decision>&) {
    p.current.beThrottle = 0;
  };
  d.tick(3);
  EXPECT_EQ(d.machine.throttle.at(12), 7);
  EXPECT_EQ(d.machine.throttle.at(13), 7);
  d.tick(2);
  EXPECT_EQ(d.machine.throttle.at(12), 0);  // released with its CPU
  EXPECT_EQ(d.machine.throttle.at(13), 7);
  d.tick(2);
  EXPECT_EQ(d.machine.throttle.at(13), 0);
  std::vector<double> levels;
  for (const Decision& x : d.log.history()) {
    if (x.event == "be-throttle") levels.push_back(x.values.at("level"));
  }
  EXPECT_EQ(levels, (std::vector<double>{7, 7, 0}));
}

TEST(EngineWithCounters, ANewBePoolIsLoggedWithItsCpus) {
  StubDriver d;
  d.app("a", 100);
  d.policy.script[2] = [](ScriptedPolicy& p, const Observation&, std::vector<Decision>&) {
    p.current.beCpus = {13};
  };
  d.tick(4);
  std::vector<std::vector<int>> pools;
  for (const Decision& x : d.log.history()) {
    if (x.event != "be-cpus") continue;
    EXPECT_EQ(x.appName, "be");
    pools.push_back(x.toCores);
  }
  ASSERT_FALSE(pools.empty());
  EXPECT_EQ(pools.back(), (std::vector<int>{13}));
  // Only changes are logged: the pool set at interval 2 once.
  EXPECT_EQ(std::count(pools.begin(), pools.end(), std::vector<int>{13}), 1);
}

}  // namespace
}  // namespace pimcloud
