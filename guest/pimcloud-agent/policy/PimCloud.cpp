#include "policy/PimCloud.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "policy/Rule.h"

namespace pimcloud {

PimCloudPolicy::PimCloudPolicy(const PolicyContext& context, Variant variant)
    : topology_(context.topology),
      params_(context.params),
      variant_(variant),
      cores_(*context.topology) {}

std::string PimCloudPolicy::name() const {
  switch (variant_) {
    case Variant::PreferenceOnly: return "pimcloud-preference";
    case Variant::DynamicCores: return "pimcloud-cores";
    case Variant::Full: return "pimcloud";
  }
  return "pimcloud";
}

std::optional<double> PimCloudPolicy::slack(AppId app) const {
  const App& a = apps_.at(app);
  return a.window.slack(a.spec.qosNs);
}

void PimCloudPolicy::rerank() {
  std::vector<RankedApp> ranked;
  for (const auto& [id, app] : apps_) ranked.push_back({id, &app.spec});
  ranking_ = rankByPreference(std::move(ranked));
}

int PimCloudPolicy::rankOf(AppId app) const {
  auto it = std::find(ranking_.begin(), ranking_.end(), app);
  return it == ranking_.end() ? -1 : static_cast<int>(it - ranking_.begin());
}

Decision PimCloudPolicy::decision(std::int64_t tNs, const std::string& event, AppId app,
                                  const std::vector<int>& fromCpus, std::optional<double> slack,
                                  const std::string& reason) const {
  Decision d;
  d.tNs = tNs;
  d.event = event;
  d.app = app;
  auto it = apps_.find(app);
  if (it != apps_.end()) d.appName = it->second.spec.name;
  d.fromCores = fromCpus;
  d.toCores = cores_.cpusOf(app);
  d.slack = slack;
  d.reason = reason;
  return d;
}

std::string PimCloudPolicy::describe(const Move& move) const {
  const Core& c = topology_->core(move.core);
  std::ostringstream s;
  s << toString(c.type) << " cpu " << c.cpu;
  if (c.type == CoreType::Pim) s << " (stack " << c.stack << ")";
  if (move.from == kBePool) {
    s << " from the BE pool";
  } else {
    s << " from " << apps_.at(move.from).spec.name;
  }
  return s.str();
}

// ---- initial allocation (IV-D1) ----

void PimCloudPolicy::start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                           std::vector<Decision>& out) {
  for (const auto& [id, spec] : apps) {
    App a;
    a.spec = spec;
    a.window = SlackWindow(params_.slackIntervals);
    a.phase = Phase::AfterArrival;
    apps_[id] = a;
  }
  rerank();
  const int n = static_cast<int>(ranking_.size());
  const int m = topology_->stacks;
  if (n == 0) return;
  const int groupSize = (n + m) / (m + 1);  // ceil(N / (M+1))
  for (int g = 0; g <= m; ++g) {
    std::vector<AppId> group;
    for (int i = g * groupSize; i < std::min(n, (g + 1) * groupSize); ++i) {
      group.push_back(ranking_[static_cast<std::size_t>(i)]);
    }
    if (group.empty()) continue;
    // Group 1 runs on host cores with stack M as resident stack; group i on stack i-1.
    std::vector<int> pool;
    for (const Core& c : topology_->cores) {
      if (g == 0 ? c.type == CoreType::Host : (c.type == CoreType::Pim && c.stack == g)) {
        pool.push_back(c.id);
      }
    }
    const int share = static_cast<int>(pool.size() / group.size());
    std::size_t next = 0;
    for (AppId id : group) {
      App& a = apps_[id];
      a.resident = g == 0 ? m : g;
      // Equal split; with more apps than cores each still gets one while they last.
      const int want = std::max(share, 1);
      for (int k = 0; k < want && next < pool.size(); ++k) cores_.give(pool[next++], id);
      ++explored_;
      std::ostringstream reason;
      reason << "group " << g + 1 << " of " << m + 1 << ", rank " << rankOf(id) + 1
             << ", R=" << a.spec.preference() << ", resident stack " << a.resident;
      out.push_back(decision(now.tNs, "initial", id, {}, std::nullopt, reason.str()));
      if (cores_.count(id).total() == 0) {
        out.push_back(decision(now.tNs, "oversubscribed", id, {}, std::nullopt,
                               "no core left in its group at start; upsize will look for one"));
      }
    }
  }
}

// ---- application churn (IV-E4) ----

void PimCloudPolicy::arrive(AppId app, const AppSpec& spec, const Observation& now,
                            std::vector<Decision>& out) {
  if (apps_.empty()) {
    start({{app, spec}}, now, out);
    return;
  }
  App a;
  a.spec = spec;
  a.window = SlackWindow(params_.slackIntervals);
  a.phase = Phase::AfterArrival;
  // Resident stack: the one with the most free memory.
  a.resident = 1;
  std::uint64_t best = 0;
  for (int s = 1; s <= topology_->stacks; ++s) {
    auto it = now.freeBytes.find(s);
    const std::uint64_t free = it == now.freeBytes.end() ? 0 : it->second;
    if (free > best) {
      best = free;
      a.resident = s;
    }
  }
  apps_[app] = a;
  rerank();
  const int i = rankOf(app);
  const int n = static_cast<int>(ranking_.size());
  const AppId neighbour = ranking_[static_cast<std::size_t>(i != n - 1 ? i + 1 : i - 1)];
  std::ostringstream reason;
  reason << "re-ranked: rank " << i + 1 << " of " << n << ", R=" << spec.preference()
         << ", resident stack " << a.resident;
  bool got = false;
  if (cores_.count(neighbour).total() > 1) {
    const std::vector<int> before = cores_.cpusOf(neighbour);
    // The neighbour gives a core in its adjustCore(-1) order that keeps the rule.
    std::vector<int> candidates;
    for (CoreType t : {CoreType::Host, CoreType::Pim}) {
      if (t == CoreType::Host) {
        auto v = pickOrder(neighbour, t, 0);
        candidates.insert(candidates.end(), v.begin(), v.end());
      } else {
        const int res = apps_.at(neighbour).resident;
        for (int s : stackOrder(res)) {
          if (s == res) continue;
          auto v = pickOrder(neighbour, t, s);
          candidates.insert(candidates.end(), v.begin(), v.end());
        }
        auto v = pickOrder(neighbour, t, res);
        candidates.insert(candidates.end(), v.begin(), v.end());
      }
    }
    for (int core : candidates) {
      if (tryMove(core, app)) {
        Move mv{core, neighbour, app};
        reason << "; took " << describe(mv);
        Decision d = decision(now.tNs, "arrive", app, {}, std::nullopt, reason.str());
        placementFor(mv, d.placement);
        out.push_back(d);
        out.push_back(decision(now.tNs, "donate", neighbour, before, slack(neighbour),
                               "core to the new neighbour in rank " + spec.name));
        changed(neighbour, Phase::AfterDonate, !d.placement.empty());
        got = true;
        break;
      }
    }
  }
  if (!got) {
    auto mv = adjustCoreUp(app, params_.eagerReclaim);
    if (mv) {
      reason << "; neighbour " << apps_.at(neighbour).spec.name << " could not give a core, took "
             << describe(*mv);
      Decision d = decision(now.tNs, "arrive", app, {}, std::nullopt, reason.str());
      placementFor(*mv, d.placement);
      out.push_back(d);
    } else {
      out.push_back(decision(now.tNs, "arrive", app, {}, std::nullopt, reason.str()));
      out.push_back(decision(now.tNs, "oversubscribed", app, {}, std::nullopt,
                             "no core for the new app; admission control needed"));
    }
  }
}

void PimCloudPolicy::exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) {
  auto it = apps_.find(app);
  if (it == apps_.end()) return;
  const std::vector<int> before = cores_.cpusOf(app);
  Decision d = decision(tNs, "exit", app, before, std::nullopt, "cores recycled to the BE pool");
  cores_.releaseAll(app);
  d.toCores.clear();
  apps_.erase(it);
  rerank();
  out.push_back(d);
}

// ---- adjustCore (IV-E3) ----

std::vector<int> PimCloudPolicy::stackOrder(int resident) const {
  // Resident stack first, then the OS spill order resident+1, ..., M, 1, ...
  std::vector<int> order;
  for (int k = 0; k < topology_->stacks; ++k) {
    order.push_back((resident - 1 + k) % topology_->stacks + 1);
  }
  return order;
}

std::vector<int> PimCloudPolicy::pickOrder(AppId holder, CoreType type, int stack) const {
  std::vector<int> v;
  for (int core : cores_.coresOf(holder)) {
    const Core& c = topology_->core(core);
    if (c.type == type && (type == CoreType::Host || c.stack == stack)) v.push_back(core);
  }
  if (holder == kBePool) return v;  // lowest id first
  // From an app: the core it got last.
  std::sort(v.begin(), v.end(),
            [this](int a, int b) { return cores_.acquiredAt(a) > cores_.acquiredAt(b); });
  return v;
}

bool PimCloudPolicy::tryMove(int core, AppId to) {
  ++explored_;
  const AppId from = cores_.owner(core);
  const std::uint64_t stamp = cores_.acquiredAt(core);
  cores_.give(core, to);
  if (pimcloudRuleHolds(cores_, ranking_)) return true;
  cores_.restore(core, from, stamp);
  return false;
}

std::optional<PimCloudPolicy::Move> PimCloudPolicy::adjustCoreUp(AppId app, bool allowDonors) {
  const int rank = rankOf(app);
  // Donors: apps with smaller R (later in rank), settled, with positive slack and a core
  // to spare, largest slack first.
  std::vector<std::pair<double, AppId>> donors;
  if (allowDonors) {
    for (std::size_t i = static_cast<std::size_t>(rank) + 1; i < ranking_.size(); ++i) {
      const AppId d = ranking_[i];
      const App& da = apps_.at(d);
      const auto s = da.window.slack(da.spec.qosNs);
      if (da.phase == Phase::Steady && s && *s > 0 && cores_.count(d).total() > 1) {
        donors.push_back({*s, d});
      }
    }
    std::stable_sort(donors.begin(), donors.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  std::vector<std::pair<CoreType, int>> kinds{{CoreType::Host, 0}};
  for (int s : stackOrder(apps_.at(app).resident)) kinds.push_back({CoreType::Pim, s});
  for (const auto& [type, stack] : kinds) {
    std::vector<AppId> sources{kBePool};
    for (const auto& d : donors) sources.push_back(d.second);
    for (AppId source : sources) {
      // One candidate per source and kind: the rule only sees counts per type.
      const std::vector<int> cores = pickOrder(source, type, stack);
      if (!cores.empty() && tryMove(cores.front(), app)) return Move{cores.front(), source, app};
    }
  }
  return std::nullopt;
}

std::optional<PimCloudPolicy::Move> PimCloudPolicy::adjustCoreDown(AppId app) {
  if (cores_.count(app).total() <= 1) return std::nullopt;
  const int resident = apps_.at(app).resident;
  std::vector<int> candidates = pickOrder(app, CoreType::Host, 0);
  if (candidates.empty()) {
    std::vector<int> remote;
    for (int core : cores_.coresOf(app)) {
      const Core& c = topology_->core(core);
      if (c.type == CoreType::Pim && c.stack != resident) remote.push_back(core);
    }
    std::sort(remote.begin(), remote.end(),
              [this](int a, int b) { return cores_.acquiredAt(a) > cores_.acquiredAt(b); });
    candidates = remote.empty() ? pickOrder(app, CoreType::Pim, resident) : remote;
  }
  if (candidates.empty()) return std::nullopt;
  ++explored_;
  cores_.give(candidates.front(), kBePool);  // removing a core never breaks the rule
  return Move{candidates.front(), app, kBePool};
}

void PimCloudPolicy::placementFor(const Move& move, std::vector<PlacementRequest>& out) const {
  if (variant_ != Variant::Full) return;
  const Core& c = topology_->core(move.core);
  if (c.type != CoreType::Pim) return;
  using K = PlacementRequest::Kind;
  if (move.to != kBePool) {
    const App& a = apps_.at(move.to);
    if (c.stack != a.resident) {
      out.push_back({K::MigrateThreadTo, move.to, move.core, c.stack});
      if (cores_.pimOn(move.to, c.stack) == 1) out.push_back({K::Replicate, move.to, -1, c.stack});
    }
  }
  if (move.from != kBePool) {
    const App& a = apps_.at(move.from);
    if (c.stack != a.resident) {
      out.push_back({K::MigrateThreadBack, move.from, move.core, a.resident});
      if (cores_.pimOn(move.from, c.stack) == 0) {
        out.push_back({K::DropReplicas, move.from, -1, c.stack});
      }
    }
  }
}

// ---- monitoring and resource adjustment (IV-D2, IV-E) ----

void PimCloudPolicy::changed(AppId app, Phase phase, bool pages) {
  App& a = apps_.at(app);
  a.phase = phase;
  a.waited = 0;
  a.pagesInFlight = pages;
  a.window.clear();
}

void PimCloudPolicy::step(const Observation& now, std::vector<Decision>& out) {
  for (const auto& [id, st] : now.stats) {
    auto it = apps_.find(id);
    if (it == apps_.end() || st.count == 0) continue;  // no requests: no latency sample
    it->second.window.add(st.p99Ns, st.meanNs);
  }
  for (AppId id : ranking_) {
    if (apps_.at(id).phase != Phase::Steady) settle(id, now.tNs, out);
  }
  if (variant_ == Variant::PreferenceOnly) return;

  // Upsize violators first, worst slack first: they need cores before anyone sheds more.
  std::vector<std::pair<double, AppId>> violators;
  std::vector<std::pair<double, AppId>> overProvisioned;
  for (AppId id : ranking_) {
    App& a = apps_.at(id);
    if (a.phase != Phase::Steady || a.window.size() < params_.minSamples) continue;
    const double s = *a.window.slack(a.spec.qosNs);
    if (s < 0) {
      violators.push_back({s, id});
    } else {
      a.oversubscribed = false;
      if (s > a.threshold) overProvisioned.push_back({s, id});
    }
  }
  std::stable_sort(violators.begin(), violators.end());
  for (const auto& [s, id] : violators) {
    if (apps_.at(id).phase == Phase::Steady) upsizeStep(id, s, now.tNs, out);
  }
  // Lazy reclaim: every app with slack above its threshold sheds a core to the BE pool,
  // where violators find it first.
  for (const auto& [s, id] : overProvisioned) {
    if (apps_.at(id).phase == Phase::Steady) downsizeStep(id, s, now.tNs, out);
  }
}

void PimCloudPolicy::settle(AppId id, std::int64_t tNs, std::vector<Decision>& out) {
  App& a = apps_.at(id);
  ++a.waited;
  const auto s = a.window.slack(a.spec.qosNs);
  const int minWait = a.pagesInFlight ? params_.minWaitPages : params_.minWaitCores;
  const int maxWait = a.pagesInFlight ? params_.maxWaitPages : params_.maxWaitCores;
  if (a.phase == Phase::AfterDownsize && s && *s < 0) {
    // Algorithm 1: revert, and never again downsize below the slack we had.
    const std::vector<int> before = cores_.cpusOf(id);
    Decision d = decision(tNs, "downsize-revert", id, before, s, "");
    std::optional<Move> mv;
    if (a.removedCore >= 0 && cores_.owner(a.removedCore) == kBePool &&
        tryMove(a.removedCore, id)) {
      mv = Move{a.removedCore, kBePool, id};
    } else {
      mv = adjustCoreUp(id, params_.eagerReclaim);
    }
    a.threshold = a.goodSlack;
    std::ostringstream reason;
    reason << "QoS violated after downsize; threshold raised to " << a.threshold;
    if (mv) {
      reason << "; took back " << describe(*mv);
      placementFor(*mv, d.placement);
    } else {
      reason << "; no core to take back";
    }
    d.toCores = cores_.cpusOf(id);
    d.reason = reason.str();
    out.push_back(d);
    changed(id, Phase::AfterRevert, !d.placement.empty());
    return;
  }
  const bool done = (a.waited >= minWait && a.window.stable(params_.stableTolerance)) ||
                    a.waited >= maxWait;
  if (!done) return;
  if (a.phase == Phase::AfterUpsize && s && *s >= 0) {
    // Violation resolved: remember the least positive slack (IV-E2).
    a.threshold = *s;
    a.oversubscribed = false;
    std::ostringstream reason;
    reason << "QoS met; threshold set to " << a.threshold;
    out.push_back(decision(tNs, "upsize-resolved", id, cores_.cpusOf(id), s, reason.str()));
  }
  a.phase = Phase::Steady;
}

void PimCloudPolicy::upsizeStep(AppId id, double s, std::int64_t tNs, std::vector<Decision>& out) {
  App& a = apps_.at(id);
  const std::vector<int> before = cores_.cpusOf(id);
  const auto mv = adjustCoreUp(id, params_.eagerReclaim);
  if (!mv) {
    if (!a.oversubscribed) {
      a.oversubscribed = true;
      out.push_back(decision(tNs, "oversubscribed", id, before, s,
                             "QoS violated and no core can be added under the PIMCloud rule; "
                             "admission control needed"));
    }
    return;
  }
  Decision d = decision(tNs, "upsize", id, before, s, "QoS violated; took " + describe(*mv));
  placementFor(*mv, d.placement);
  const bool pages = !d.placement.empty();
  out.push_back(d);
  if (mv->from != kBePool) {
    std::vector<int> donorBefore = cores_.cpusOf(mv->from);
    donorBefore.push_back(topology_->core(mv->core).cpu);
    std::sort(donorBefore.begin(), donorBefore.end());
    out.push_back(decision(tNs, "donate", mv->from, donorBefore, slack(mv->from),
                           "eager reclaim for " + a.spec.name + " (largest slack)"));
    changed(mv->from, Phase::AfterDonate, pages);
  }
  changed(id, Phase::AfterUpsize, pages);
}

void PimCloudPolicy::downsizeStep(AppId id, double s, std::int64_t tNs,
                                  std::vector<Decision>& out) {
  App& a = apps_.at(id);
  const std::vector<int> before = cores_.cpusOf(id);
  const auto mv = adjustCoreDown(id);
  if (!mv) return;  // one core left
  a.goodSlack = s;
  a.removedCore = mv->core;
  std::ostringstream reason;
  reason << "slack above threshold " << a.threshold << "; gave " << toString(topology_->core(mv->core).type)
         << " cpu " << topology_->core(mv->core).cpu << " to the BE pool";
  Decision d = decision(tNs, "downsize", id, before, s, reason.str());
  placementFor(*mv, d.placement);
  out.push_back(d);
  changed(id, Phase::AfterDownsize, !d.placement.empty());
}

Assignment PimCloudPolicy::assignment() const {
  Assignment as;
  as.exclusive = true;
  for (const auto& [id, a] : apps_) {
    as.appCpus[id] = cores_.cpusOf(id);
    as.residentStack[id] = a.resident;
    for (int core : cores_.coresOf(id)) {
      const Core& c = topology_->core(core);
      if (c.type == CoreType::Pim && c.stack != a.resident) as.dedicatedCpus[id].push_back(c.cpu);
    }
  }
  as.beCpus = cores_.cpusOf(kBePool);
  return as;
}

namespace {

std::vector<std::string> pimcloudOptions(const nlohmann::json& options, PolicyParams& params) {
  OptionReader read(options);
  read.boolean("eager_reclaim", params.eagerReclaim);
  return read.errors;
}

const std::vector<PolicyOption> kPimCloudOptions = {
    {"eager_reclaim", "boolean", "true",
     "upsize may take cores from lower-R apps (eager reclaim); false: only the BE pool"}};

PIMCLOUD_REGISTER_POLICY(
    "pimcloud", "PIMCloud: preference, dynamic cores and dynamic memory",
    [](const PolicyContext& c) {
      return std::make_unique<PimCloudPolicy>(c, PimCloudPolicy::Variant::Full);
    },
    kPimCloudOptions, pimcloudOptions);
PIMCLOUD_REGISTER_POLICY(
    "pimcloud-cores", "PIMCloud ablation: preference + dynamic cores",
    [](const PolicyContext& c) {
      return std::make_unique<PimCloudPolicy>(c, PimCloudPolicy::Variant::DynamicCores);
    },
    kPimCloudOptions, pimcloudOptions);
PIMCLOUD_REGISTER_POLICY("pimcloud-preference",
                         "PIMCloud ablation: preference-aware initial allocation only",
                         [](const PolicyContext& c) {
                           return std::make_unique<PimCloudPolicy>(
                               c, PimCloudPolicy::Variant::PreferenceOnly);
                         });
}  // namespace

}  // namespace pimcloud
