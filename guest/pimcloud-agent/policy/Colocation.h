// The shape the seed papers' colocation policies share (BALM, seed 003's controller): the
// LC apps hold fixed host cores with their memory on one stack, the best-effort jobs run
// on every other core, and the policy acts on the jobs (throttle, quota, their pages).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "policy/Policy.h"

namespace pimcloud {

class ColocationPolicy : public Policy {
 public:
  // `lcCores` host cores per LC app in id order (0: an even split, at least one each;
  // more apps than host cores share them round robin); their memory on `lcStack`.
  ColocationPolicy(const PolicyContext& context, int lcCores, int lcStack);

  void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
             std::vector<Decision>& out) override;
  void arrive(AppId app, const AppSpec& spec, const Observation& now,
              std::vector<Decision>& out) override;
  void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) override;
  Assignment assignment() const override;

 protected:
  virtual void onArrive(AppId /*app*/, const AppSpec& /*spec*/, const Observation& /*now*/,
                        std::vector<Decision>& /*out*/) {}
  virtual void onExit(AppId /*app*/) {}
  // What the policy adds to the cores and the resident stack (throttle, quota).
  virtual void decorate(Assignment& /*as*/) const {}
  static Decision event(std::int64_t tNs, const std::string& name, AppId app,
                        const std::string& appName, std::string reason,
                        std::map<std::string, double> values = {});

  const Topology* topology_;
  std::map<AppId, AppSpec> apps_;
  std::map<AppId, std::vector<int>> appCpus_;
  std::vector<int> beCpus_;  // sorted

 private:
  void assignCores();
  int lcCores_;
  int lcStack_;
};

}  // namespace pimcloud
