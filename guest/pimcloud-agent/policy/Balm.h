// BALM (seed 001, SPAA 2021): QoS-aware memory-bandwidth partitioning across NUMA nodes.
// The LC apps keep fixed host cores with their memory on stack 1; the best-effort jobs run
// on every other core, their pages wherever first touch put them, stack 1 included. On an
// SLO violation (an LC app's p99 above its QoS) BALM sets the BE CPUs' bandwidth throttle
// to its most restrictive level at once (as quick as MBA), then each following interval
// moves a share of the BE pages on stack 1 to another stack and releases the throttle by
// one level (converging, as page migration does, without MBA's lasting cost). Baselines as
// the option `mode`: "mba" (throttle only: most restrictive on a violation, one level off
// per quiet interval), "pgm" (page migration only: an increment per violating interval)
// and "unshared" (the BE pages kept off stack 1 from the start, no throttle).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "policy/Colocation.h"

namespace pimcloud {

class BalmPolicy : public ColocationPolicy {
 public:
  explicit BalmPolicy(const PolicyContext& context);
  std::string name() const override { return "balm"; }
  void step(const Observation& now, std::vector<Decision>& out) override;

  int level() const { return level_; }
  static constexpr int kLcStack = 1;  // where the LC apps' memory is gathered (CC)

 private:
  void decorate(Assignment& as) const override { as.beThrottle = level_; }
  // The LC app whose p99 is furthest above its QoS this interval, or kBePool.
  AppId violator(const Observation& now, double& p99, double& qos) const;
  Decision moveIncrement(std::int64_t tNs, double fraction, const std::string& why) const;
  int beStack() const;  // where BE pages go: the last stack that is not the LC's

  BalmParams params_;
  int level_ = 0;          // the BE CPUs' throttle level now
  bool releasing_ = false;  // BALM: migrating and releasing since the last violation
};

}  // namespace pimcloud
