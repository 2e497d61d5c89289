#include "policy/Baselines.h"

#include <algorithm>
#include <sstream>

namespace pimcloud {
namespace {

Decision record(std::int64_t tNs, const std::string& event, AppId app, const std::string& name,
                std::vector<int> from, std::vector<int> to, std::optional<double> slack,
                const std::string& reason) {
  Decision d;
  d.tNs = tNs;
  d.event = event;
  d.app = app;
  d.appName = name;
  d.fromCores = std::move(from);
  d.toCores = std::move(to);
  d.slack = slack;
  d.reason = reason;
  return d;
}

}  // namespace

// ---- Default ----

std::vector<int> DefaultPolicy::allCpus() const {
  std::vector<int> v;
  for (const Core& c : topology_->cores) v.push_back(c.cpu);
  return v;
}

void DefaultPolicy::start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                          std::vector<Decision>& out) {
  for (const auto& [id, spec] : apps) arrive(id, spec, now, out);
}

void DefaultPolicy::arrive(AppId app, const AppSpec& spec, const Observation& now,
                           std::vector<Decision>& out) {
  apps_[app] = spec;
  out.push_back(record(now.tNs, "initial", app, spec.name, {}, allCpus(), std::nullopt,
                       "OS scheduling on every core, first touch"));
}

void DefaultPolicy::exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) {
  auto it = apps_.find(app);
  if (it == apps_.end()) return;
  out.push_back(record(tNs, "exit", app, it->second.name, allCpus(), {}, std::nullopt, ""));
  apps_.erase(it);
}

Assignment DefaultPolicy::assignment() const {
  Assignment as;
  as.exclusive = false;
  for (const auto& [id, spec] : apps_) as.appCpus[id] = allCpus();
  as.beCpus = allCpus();
  return as;
}

// ---- AMS-like ----

std::vector<int> AmsPolicy::cpusOf(CoreType type) const {
  std::vector<int> v;
  for (const Core& c : topology_->cores) {
    if (c.type == type) v.push_back(c.cpu);
  }
  return v;
}

void AmsPolicy::start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                      std::vector<Decision>& out) {
  for (const auto& [id, spec] : apps) arrive(id, spec, now, out);
}

void AmsPolicy::arrive(AppId app, const AppSpec& spec, const Observation& now,
                       std::vector<Decision>& out) {
  apps_[app] = spec;
  const CoreType type =
      spec.preference() >= params_.amsHostMinR ? CoreType::Host : CoreType::Pim;
  preferred_[app] = type;
  std::ostringstream reason;
  reason << "static preference R=" << spec.preference() << " -> all " << toString(type)
         << " cores, shared with the other apps preferring them";
  out.push_back(record(now.tNs, "initial", app, spec.name, {}, cpusOf(type), std::nullopt,
                       reason.str()));
}

void AmsPolicy::exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) {
  auto it = apps_.find(app);
  if (it == apps_.end()) return;
  out.push_back(record(tNs, "exit", app, it->second.name, cpusOf(preferred_.at(app)), {},
                       std::nullopt, ""));
  apps_.erase(it);
  preferred_.erase(app);
}

Assignment AmsPolicy::assignment() const {
  Assignment as;
  as.exclusive = false;
  for (const auto& [id, type] : preferred_) as.appCpus[id] = cpusOf(type);
  as.beCpus = cpusOf(params_.amsBeType);
  return as;
}

// ---- Octopus-Man-like ----

void OctopusManPolicy::reorder() {
  order_.clear();
  for (const std::string& name : params_.octopusOrder) {
    for (const auto& [id, a] : apps_) {
      if (a.spec.name == name && std::find(order_.begin(), order_.end(), id) == order_.end()) {
        order_.push_back(id);
      }
    }
  }
  for (const auto& [id, a] : apps_) {
    if (std::find(order_.begin(), order_.end(), id) == order_.end()) order_.push_back(id);
  }
}

int OctopusManPolicy::freeCore(CoreType type, AppId near) const {
  // A PIM core on the stack where the app already has most cores, else any.
  int best = -1;
  int bestScore = -1;
  for (int core : cores_.coresOf(kBePool)) {
    const Core& c = topology_->core(core);
    if (c.type != type) continue;
    const int score = type == CoreType::Pim ? cores_.pimOn(near, c.stack) : 0;
    if (score > bestScore) {
      best = core;
      bestScore = score;
    }
  }
  return best;
}

bool OctopusManPolicy::up(AppId id) {
  App& a = apps_.at(id);
  ++explored_;
  if (!a.big) {
    if (const int core = freeCore(CoreType::Pim, id); core >= 0) {
      cores_.give(core, id);
      return true;
    }
    // Small cores exhausted: switch to big cores.
    const int host = freeCore(CoreType::Host, id);
    if (host < 0) return false;
    a.smallBeforeBig = cores_.count(id).pim;
    cores_.releaseAll(id);
    cores_.give(host, id);
    a.big = true;
    return true;
  }
  if (const int core = freeCore(CoreType::Host, id); core >= 0) {
    cores_.give(core, id);
    return true;
  }
  return false;
}

bool OctopusManPolicy::down(AppId id) {
  App& a = apps_.at(id);
  const std::vector<int> mine = cores_.coresOf(id);
  ++explored_;
  if (mine.size() > 1) {
    cores_.give(mine.back(), kBePool);
    return true;
  }
  if (!a.big) return false;
  // One big core left: back to as many small cores as it had before (or as are free).
  cores_.releaseAll(id);
  a.big = false;
  for (int k = 0; k < std::max(1, a.smallBeforeBig); ++k) {
    const int core = freeCore(CoreType::Pim, id);
    if (core < 0) break;
    cores_.give(core, id);
  }
  if (cores_.count(id).total() == 0 && !mine.empty()) {
    cores_.give(mine.front(), id);  // no small core free: keep the big one
    a.big = true;
    return false;
  }
  return true;
}

void OctopusManPolicy::start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                             std::vector<Decision>& out) {
  for (const auto& [id, spec] : apps) {
    App a;
    a.spec = spec;
    a.window = SlackWindow(params_.slackIntervals);
    apps_[id] = a;
  }
  reorder();
  for (AppId id : order_) {
    const int core = freeCore(CoreType::Pim, id);
    if (core >= 0) cores_.give(core, id);
    out.push_back(record(now.tNs, "initial", id, apps_.at(id).spec.name, {}, cores_.cpusOf(id),
                         std::nullopt, "one small core to start"));
    apps_.at(id).waited = 0;
  }
}

void OctopusManPolicy::arrive(AppId app, const AppSpec& spec, const Observation& now,
                              std::vector<Decision>& out) {
  start({{app, spec}}, now, out);
}

void OctopusManPolicy::exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) {
  auto it = apps_.find(app);
  if (it == apps_.end()) return;
  out.push_back(record(tNs, "exit", app, it->second.spec.name, cores_.cpusOf(app), {},
                       std::nullopt, "cores recycled to the BE pool"));
  cores_.releaseAll(app);
  apps_.erase(it);
  reorder();
}

void OctopusManPolicy::step(const Observation& now, std::vector<Decision>& out) {
  for (const auto& [id, st] : now.stats) {
    auto it = apps_.find(id);
    if (it != apps_.end() && st.count > 0) it->second.window.add(st.p99Ns, st.meanNs);
  }
  for (AppId id : order_) {
    App& a = apps_.at(id);
    if (a.waited >= 0) {
      ++a.waited;
      const bool done = (a.waited >= params_.minWaitCores &&
                         a.window.stable(params_.stableTolerance)) ||
                        a.waited >= params_.maxWaitCores;
      if (!done) continue;
      a.waited = -1;
    }
    if (a.window.size() < params_.minSamples) continue;
    const double s = *a.window.slack(a.spec.qosNs);
    const std::vector<int> before = cores_.cpusOf(id);
    if (s < 0) {
      if (up(id)) {
        a.oversubscribed = false;
        out.push_back(record(now.tNs, "upsize", id, a.spec.name, before, cores_.cpusOf(id), s,
                             a.big ? "QoS violated; big cores" : "QoS violated; small cores"));
        a.window.clear();
        a.waited = 0;
      } else if (!a.oversubscribed) {
        a.oversubscribed = true;
        out.push_back(record(now.tNs, "oversubscribed", id, a.spec.name, before, before, s,
                             "QoS violated and no free core of the ladder's next step"));
      }
    } else if (s > params_.octopusDownsizeSlack && down(id)) {
      out.push_back(record(now.tNs, "downsize", id, a.spec.name, before, cores_.cpusOf(id), s,
                           "slack above the downsize bound"));
      a.window.clear();
      a.waited = 0;
    }
  }
}

Assignment OctopusManPolicy::assignment() const {
  Assignment as;
  as.exclusive = true;
  for (const auto& [id, a] : apps_) as.appCpus[id] = cores_.cpusOf(id);
  as.beCpus = cores_.cpusOf(kBePool);
  return as;
}

namespace {

std::vector<std::string> amsOptions(const nlohmann::json& options, PolicyParams& params) {
  OptionReader read(options);
  read.number("host_min_r", params.amsHostMinR, 0, 1e6);
  std::string beType = params.amsBeType == CoreType::Host ? "host" : "pim";
  read.choice("be_core_type", beType, {"host", "pim"});
  params.amsBeType = beType == "host" ? CoreType::Host : CoreType::Pim;
  return read.errors;
}

std::vector<std::string> octopusOptions(const nlohmann::json& options, PolicyParams& params) {
  OptionReader read(options);
  read.strings("order", params.octopusOrder);
  read.number("downsize_slack", params.octopusDownsizeSlack, 0, 1);
  return read.errors;
}

PIMCLOUD_REGISTER_POLICY("default", "OS scheduling on every core, first touch, no isolation",
                         [](const PolicyContext& c) { return std::make_unique<DefaultPolicy>(c); });
PIMCLOUD_REGISTER_POLICY(
    "ams", "AMS-like: static core-type preference, shared within a type",
    [](const PolicyContext& c) { return std::make_unique<AmsPolicy>(c); },
    {{"host_min_r", "number", "1.0", "apps with R >= this prefer host cores"},
     {"be_core_type", "string", "\"pim\"", "the best-effort jobs' core type: host or pim"}},
    amsOptions);
PIMCLOUD_REGISTER_POLICY(
    "octopus-man", "Octopus-Man-like: small cores first, then big, apps in a given order",
    [](const PolicyContext& c) { return std::make_unique<OctopusManPolicy>(c); },
    {{"order", "list of strings", "[]", "the app order to serve (empty: arrival order)"},
     {"downsize_slack", "number", "0.3", "slack above which an app steps down its ladder"}},
    octopusOptions);
}  // namespace

}  // namespace pimcloud
