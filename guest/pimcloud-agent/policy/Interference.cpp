#include "policy/Interference.h"

#include <algorithm>
#include <numeric>
#include <sstream>


namespace pimcloud {
namespace {

std::string cores(double n) {
  std::ostringstream s;
  s << n << (n == 1 ? " core" : " cores");
  return s.str();
}

}  // namespace

InterferencePolicy::InterferencePolicy(const PolicyContext& context)
    : ColocationPolicy(context, context.params.interference.lcCores, 1),
      params_(context.params.interference) {}

double InterferencePolicy::threshold(AppId app) const {
  const auto it = thresholdNs_.find(app);
  return it == thresholdNs_.end() ? 0.0 : it->second;
}

void InterferencePolicy::onArrive(AppId app, const AppSpec& spec, const Observation& now,
                                  std::vector<Decision>& out) {
  if (params_.signal == "none") {
    quota_ = 0;
  } else if (params_.signal == "latency") {
    // Seed 003: a new LC app's threshold is learnt with the BE jobs fully throttled.
    learning_[app].clear();
    learnTicks_[app] = 0;
    quota_ = kFullyThrottledCores;
    out.push_back(event(now.tNs, "interference-learn", app, spec.name,
                       "BE jobs fully throttled while " + std::to_string(params_.learnIntervals) +
                           " memory-latency estimates of " + spec.name + " are taken"));
  } else {
    quota_ = std::min(params_.floorCores, maxCores());
  }
}

void InterferencePolicy::onExit(AppId app) {
  learning_.erase(app);
  learnTicks_.erase(app);
  thresholdNs_.erase(app);
  if (params_.signal == "latency" && learning_.empty() && quota_ < params_.floorCores) {
    quota_ = std::min(params_.floorCores, maxCores());
  }
}

void InterferencePolicy::learn(const Observation& now, std::vector<Decision>& out) {
  for (auto it = learning_.begin(); it != learning_.end();) {
    const AppId app = it->first;
    ++learnTicks_[app];
    const auto e = now.memLatencyNs.find(app);
    if (e != now.memLatencyNs.end() && e->second > 0) it->second.push_back(e->second);
    const auto& samples = it->second;
    if (static_cast<int>(samples.size()) >= params_.learnIntervals) {
      const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) /
                          static_cast<double>(samples.size());
      thresholdNs_[app] = mean * (1 + params_.thresholdMargin);
      out.push_back(event(now.tNs, "interference-threshold", app, apps_.at(app).name,
                         "mean of the estimates taken with the BE jobs fully throttled",
                         {{"threshold_ns", thresholdNs_[app]},
                          {"samples", static_cast<double>(samples.size())}}));
      it = learning_.erase(it);
      continue;
    }
    if (learnTicks_[app] >= 4 * params_.learnIntervals && samples.empty()) {
      // No counters (QEMU, or a board without them): nothing to learn from.
      out.push_back(event(now.tNs, "backend-error", app, apps_.at(app).name,
                         "no memory-latency estimates after " +
                             std::to_string(learnTicks_[app]) +
                             " intervals (the board has no counters: [gem5] counters = true); "
                             "the BE jobs stay at " + cores(params_.floorCores)));
      it = learning_.erase(it);  // no threshold: control() leaves the quota at its floor
      continue;
    }
    ++it;
  }
  if (learning_.empty()) quota_ = std::min(params_.floorCores, maxCores());
}

void InterferencePolicy::control(const Observation& now, std::vector<Decision>& out) {
  bool violated = false;
  bool measured = false;
  for (const auto& [id, spec] : apps_) {
    double value = 0;
    double limit = 0;
    if (params_.signal == "latency") {
      const auto e = now.memLatencyNs.find(id);
      const auto t = thresholdNs_.find(id);
      if (e == now.memLatencyNs.end() || t == thresholdNs_.end()) continue;
      value = e->second;
      limit = t->second;
    } else {
      const auto st = now.stats.find(id);
      if (st == now.stats.end() || st->second.count == 0) continue;
      value = st->second.p99Ns;
      limit = spec.qosNs;
    }
    measured = true;
    if (value > limit) {
      violated = true;
      if (quota_ > params_.floorCores) {
        out.push_back(event(now.tNs, "interference", id, spec.name,
                           (params_.signal == "latency" ? "memory-latency estimate" : "p99") +
                               std::string(" above its threshold: BE jobs back to ") +
                               cores(params_.floorCores),
                           {{"value_ns", value}, {"threshold_ns", limit}}));
      }
    }
  }
  if (violated) {
    quota_ = std::min(params_.floorCores, maxCores());
  } else if (measured) {
    quota_ = std::min(quota_ + params_.stepCores, maxCores());
  }
}

void InterferencePolicy::step(const Observation& now, std::vector<Decision>& out) {
  if (params_.signal == "none") return;
  if (!learning_.empty()) {
    learn(now, out);
    return;
  }
  control(now, out);
}

namespace {

std::vector<std::string> interferenceOptions(const nlohmann::json& options, PolicyParams& params) {
  OptionReader read(options);
  InterferenceParams& p = params.interference;
  read.choice("signal", p.signal, {"latency", "p99", "none"});
  read.whole("learn_intervals", p.learnIntervals, 1, 10000);
  read.number("step_cores", p.stepCores, 0.01, 1024);
  read.number("floor_cores", p.floorCores, 0.01, 1024);
  read.number("threshold_margin", p.thresholdMargin, 0, 10);
  read.whole("lc_cores", p.lcCores, 0, 1024);
  return read.errors;
}

}  // namespace

PIMCLOUD_REGISTER_POLICY(
    "interference",
    "seed 003: fixed LC cores, BE CPU quota driven by the LC apps' memory-latency estimates",
    [](const PolicyContext& c) { return std::make_unique<InterferencePolicy>(c); },
    {{"signal", "string", "\"latency\"",
      "latency (the counters' estimate against a learnt threshold), p99 (against QoS), none"},
     {"learn_intervals", "number", "10", "estimates averaged into an LC app's threshold"},
     {"step_cores", "number", "0.5", "BE quota added per interval below the threshold"},
     {"floor_cores", "number", "1", "BE quota at the start and after a violation"},
     {"threshold_margin", "number", "0", "threshold = learnt mean x (1 + margin)"},
     {"lc_cores", "number", "0", "host cores per LC app (0: the host cores split evenly)"}},
    interferenceOptions);

}  // namespace pimcloud
