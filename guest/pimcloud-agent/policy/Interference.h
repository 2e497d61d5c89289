// Seed 003's interference controller (section 5.1, "dynamic throttling"): the LC apps
// keep fixed cores, and the best-effort jobs' CPU quota follows the LC apps' memory
// latency estimated from the board's miss counters.
//  - When an LC app starts, the BE jobs are fully throttled (cpu.max at its floor) while
//    `learn_intervals` estimates of the app's memory latency are taken; their mean is the
//    app's threshold.
//  - Then the BE jobs start at one core of quota and gain half a core each interval in
//    which every LC app's estimate stays at or below its threshold; an estimate above
//    it cuts them back to one core.
// Its baselines are options of the same policy, so that everything else stays equal:
// `signal = "p99"` (the same law on each app's p99 against its QoS, Heracles-like) and
// `signal = "none"` (no control: the BE jobs run unlimited on their cores).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "policy/Colocation.h"

namespace pimcloud {

class InterferencePolicy : public ColocationPolicy {
 public:
  // cpu.max's floor is 1 ms per 100 ms period: "fully throttled" is 1% of one core.
  static constexpr double kFullyThrottledCores = 0.01;

  explicit InterferencePolicy(const PolicyContext& context);
  std::string name() const override { return "interference"; }
  void step(const Observation& now, std::vector<Decision>& out) override;

  double quotaCores() const { return quota_; }
  bool learning() const { return !learning_.empty(); }
  // An app's learnt threshold (0 while it is still being learnt).
  double threshold(AppId app) const;

 private:
  void onArrive(AppId app, const AppSpec& spec, const Observation& now,
                std::vector<Decision>& out) override;
  void onExit(AppId app) override;
  void decorate(Assignment& as) const override { as.beQuotaCores = quota_; }
  void learn(const Observation& now, std::vector<Decision>& out);
  void control(const Observation& now, std::vector<Decision>& out);
  double maxCores() const { return static_cast<double>(beCpus_.size()); }

  InterferenceParams params_;
  std::map<AppId, std::vector<double>> learning_;  // apps whose threshold is being learnt
  std::map<AppId, int> learnTicks_;                // intervals spent learning each
  std::map<AppId, double> thresholdNs_;
  double quota_ = 0;  // BE cores of quota; 0 = unlimited
};

}  // namespace pimcloud
