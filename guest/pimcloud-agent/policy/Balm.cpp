#include "policy/Balm.h"

#include <sstream>

namespace pimcloud {

BalmPolicy::BalmPolicy(const PolicyContext& context)
    : ColocationPolicy(context, context.params.balm.lcCores, kLcStack),
      params_(context.params.balm) {}

int BalmPolicy::beStack() const { return topology_->stacks >= 2 ? topology_->stacks : -1; }

AppId BalmPolicy::violator(const Observation& now, double& p99, double& qos) const {
  AppId worst = kBePool;
  double worstRatio = 1.0;
  for (const auto& [id, spec] : apps_) {
    const auto st = now.stats.find(id);
    if (st == now.stats.end() || st->second.count == 0 || spec.qosNs <= 0) continue;
    const double ratio = st->second.p99Ns / spec.qosNs;
    if (ratio > worstRatio) {
      worstRatio = ratio;
      worst = id;
      p99 = st->second.p99Ns;
      qos = spec.qosNs;
    }
  }
  return worst;
}

Decision BalmPolicy::moveIncrement(std::int64_t tNs, double fraction, const std::string& why) const {
  Decision d = event(tNs, "be-migrate", kBePool, "be", why);
  PlacementRequest p;
  p.kind = PlacementRequest::Kind::MoveBePages;
  p.fromStack = kLcStack;
  p.stack = beStack();
  p.fraction = fraction;
  d.placement.push_back(p);
  d.values = {{"fraction", fraction}, {"to_stack", static_cast<double>(p.stack)}};
  return d;
}

void BalmPolicy::step(const Observation& now, std::vector<Decision>& out) {
  const std::string& mode = params_.mode;
  const bool canMove = beStack() > 0;
  if (mode == "unshared") {
    // Every interval: what the BE jobs allocated on the LC stack since goes too.
    if (canMove) out.push_back(moveIncrement(now.tNs, 1.0, "unshared: the BE pages off the LC stack"));
    return;
  }
  double p99 = 0;
  double qos = 0;
  const AppId bad = violator(now, p99, qos);
  std::ostringstream why;
  if (bad != kBePool) {
    why << apps_.at(bad).name << " p99 " << p99 / 1e6 << " ms > QoS " << qos / 1e6 << " ms";
  }
  if (mode == "pgm") {
    if (bad != kBePool && canMove) {
      out.push_back(moveIncrement(now.tNs, params_.stepFraction, "pgm: " + why.str()));
    }
    return;
  }
  if (bad != kBePool) {
    // BALM and MBA alike: the most restrictive level at once.
    if (level_ != params_.maxLevel) {
      Decision d = event(now.tNs, "be-violation", bad, apps_.at(bad).name,
                         why.str() + ": BE throttle to its most restrictive level");
      d.values = {{"p99_ns", p99}, {"qos_ns", qos}};
      out.push_back(std::move(d));
    }
    level_ = params_.maxLevel;
    releasing_ = mode == "balm";
    return;
  }
  if (level_ == 0) {
    releasing_ = false;
    return;
  }
  if (mode == "balm" && releasing_ && canMove) {
    // One increment of migration per level released.
    out.push_back(moveIncrement(now.tNs, params_.stepFraction,
                                "balm: releasing the throttle from level " +
                                    std::to_string(level_) + " as the BE pages leave"));
  }
  --level_;
}

namespace {

std::vector<std::string> balmOptions(const nlohmann::json& options, PolicyParams& params) {
  OptionReader read(options);
  BalmParams& p = params.balm;
  read.choice("mode", p.mode, {"balm", "mba", "pgm", "unshared"});
  read.whole("max_level", p.maxLevel, 1, 255);
  read.number("step_fraction", p.stepFraction, 0.01, 1);
  read.whole("lc_cores", p.lcCores, 0, 1024);
  return read.errors;
}

}  // namespace

PIMCLOUD_REGISTER_POLICY(
    "balm",
    "seed 001 BALM: on an SLO violation throttle the BE at once, then migrate its pages off the "
    "LC stack while releasing the throttle",
    [](const PolicyContext& c) { return std::make_unique<BalmPolicy>(c); },
    {{"mode", "string", "\"balm\"",
      "balm, mba (throttle only), pgm (migration only), unshared (BE pages off the LC stack)"},
     {"max_level", "number", "9", "the throttle's most restrictive level"},
     {"step_fraction", "number", "0.25", "share of the BE pages on the LC stack moved per step"},
     {"lc_cores", "number", "0", "host cores per LC app (0: the host cores split evenly)"}},
    balmOptions);

}  // namespace pimcloud
