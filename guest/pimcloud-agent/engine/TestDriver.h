// Test support: an Engine over a FakeMachine and its modelled latency, ticking 100 ms at a
// time. Used by the policy and engine tests and the allocation-search benchmark.
#pragma once

#include <memory>
#include <string>

#include "backend/FakeMachine.h"
#include "engine/DecisionLog.h"
#include "engine/Engine.h"
#include "policy/Policy.h"

namespace pimcloud::testing {

struct Driver {
  Topology topology;
  FakeMachine machine;
  FakeLatencySource source;
  DecisionLog log;
  std::unique_ptr<Policy> policy;
  std::unique_ptr<Engine> engine;
  std::int64_t tNs = 0;
  int nextPid = 1000;

  explicit Driver(const std::string& policyName, PolicyParams params = {},
                  Topology t = Topology::paper(), EngineOptions options = {})
      : topology(std::move(t)), machine(topology), source(machine) {
    PolicyContext ctx{&topology, params};
    policy = PolicyRegistry::create(policyName, ctx);
    engine = std::make_unique<Engine>(topology, *policy, machine, source, log, nullptr, options);
  }

  // An LC app: max RPS per host core and per PIM core, offered load, QoS = 10x service.
  void app(const std::string& name, double perHost, double perPim, double load,
           int homeNode = 1, std::size_t pages = 0, int threads = 4) {
    FakeAppModel m;
    m.load = load;
    m.maxRpsHost = perHost;
    m.maxRpsPim = perPim;
    m.homeNode = homeNode;
    machine.addApp(name, nextPid++, m, threads, pages);
    source.start(name, 10 * m.serviceNs, perHost, perPim, threads);
  }
  void exit(const std::string& name) {
    machine.removeApp(name);
    source.exit(name);
  }
  void tick(int n = 1) {
    for (int i = 0; i < n; ++i) {
      tNs += 100'000'000;
      source.setTime(tNs);
      engine->tick(tNs);
    }
  }
  AppId id(const std::string& name) const { return engine->idOf(name); }

  // Fig. 6's case: "friendly" (pid 1001, 4000 pages, 4 threads) beside "averse"; then
  // friendly's load outgrows its resident stack and it takes remote PIM cores, whose
  // threads take their share of its pages.
  void remotePimCoreApps() {
    app("averse", 300, 100, 100, 2);
    app("friendly", 100, 200, 100, 1, 4000, 4);
  }
  void overloadFriendly(int settle = 60, int after = 80) {
    tick(settle);
    machine.setLoad("averse", 50);
    machine.setLoad("friendly", 2000);  // needs stack 2 too: remote cores
    tick(after);
  }
};

}  // namespace pimcloud::testing
