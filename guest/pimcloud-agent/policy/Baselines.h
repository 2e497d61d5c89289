// The paper's baselines (section V-A), as plugins behind the same Policy interface.
//  - Default: the OS schedules every thread on every core (no isolation), first touch.
//  - AMS-like: a static preference per app (R against a threshold, standing in for the
//    cache miss-ratio curves AMS reads from hardware we do not have); each app runs on
//    every core of its preferred type, shared with the other apps of that type; fixed.
//  - Octopus-Man-like: exclusive cores, each app climbs a ladder of small (PIM) cores
//    first and then big (host) cores until QoS is met, never both at once; apps are
//    served in a given order (the paper's idealised version tries every order: run one
//    scenario per order and keep the best).
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "policy/CoreMap.h"
#include "policy/Policy.h"
#include "policy/Slack.h"

namespace pimcloud {

class DefaultPolicy : public Policy {
 public:
  explicit DefaultPolicy(const PolicyContext& context) : topology_(context.topology) {}
  std::string name() const override { return "default"; }
  void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
             std::vector<Decision>& out) override;
  void arrive(AppId app, const AppSpec& spec, const Observation& now,
              std::vector<Decision>& out) override;
  void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) override;
  void step(const Observation&, std::vector<Decision>&) override {}
  Assignment assignment() const override;

 private:
  std::vector<int> allCpus() const;
  const Topology* topology_;
  std::map<AppId, AppSpec> apps_;
};

class AmsPolicy : public Policy {
 public:
  explicit AmsPolicy(const PolicyContext& context)
      : topology_(context.topology), params_(context.params) {}
  std::string name() const override { return "ams"; }
  void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
             std::vector<Decision>& out) override;
  void arrive(AppId app, const AppSpec& spec, const Observation& now,
              std::vector<Decision>& out) override;
  void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) override;
  void step(const Observation&, std::vector<Decision>&) override {}
  Assignment assignment() const override;
  CoreType preferred(AppId app) const { return preferred_.at(app); }

 private:
  std::vector<int> cpusOf(CoreType type) const;
  const Topology* topology_;
  PolicyParams params_;
  std::map<AppId, AppSpec> apps_;
  std::map<AppId, CoreType> preferred_;
};

class OctopusManPolicy : public Policy {
 public:
  explicit OctopusManPolicy(const PolicyContext& context)
      : topology_(context.topology), params_(context.params), cores_(*context.topology) {}
  std::string name() const override { return "octopus-man"; }
  void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
             std::vector<Decision>& out) override;
  void arrive(AppId app, const AppSpec& spec, const Observation& now,
              std::vector<Decision>& out) override;
  void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) override;
  void step(const Observation& now, std::vector<Decision>& out) override;
  Assignment assignment() const override;
  std::uint64_t allocationsExplored() const override { return explored_; }
  const CoreMap& cores() const { return cores_; }
  const std::vector<AppId>& order() const { return order_; }

 private:
  struct App {
    AppSpec spec;
    SlackWindow window;
    bool big = false;  // on host cores
    int smallBeforeBig = 1;
    int waited = -1;   // >= 0 while waiting after a change
    bool oversubscribed = false;
  };
  void reorder();
  bool up(AppId app);
  bool down(AppId app);
  int freeCore(CoreType type, AppId near) const;  // -1 if none
  const Topology* topology_;
  PolicyParams params_;
  CoreMap cores_;
  std::map<AppId, App> apps_;
  std::vector<AppId> order_;
  std::uint64_t explored_ = 0;
};

}  // namespace pimcloud
