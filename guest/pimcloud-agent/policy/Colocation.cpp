#include "policy/Colocation.h"

#include <algorithm>

namespace pimcloud {

ColocationPolicy::ColocationPolicy(const PolicyContext& context, int lcCores, int lcStack)
    : topology_(context.topology), lcCores_(lcCores), lcStack_(lcStack) {}

Decision ColocationPolicy::event(std::int64_t tNs, const std::string& name, AppId app,
                                 const std::string& appName, std::string reason,
                                 std::map<std::string, double> values) {
  Decision d;
  d.tNs = tNs;
  d.event = name;
  d.app = app;
  d.appName = appName;
  d.reason = std::move(reason);
  d.values = std::move(values);
  return d;
}

void ColocationPolicy::assignCores() {
  std::vector<int> host;
  std::vector<int> rest;
  for (const Core& c : topology_->cores) (c.type == CoreType::Host ? host : rest).push_back(c.cpu);
  appCpus_.clear();
  beCpus_.clear();
  std::size_t next = 0;
  if (!apps_.empty() && !host.empty()) {
    const std::size_t each = lcCores_ > 0 ? static_cast<std::size_t>(lcCores_)
                                          : std::max<std::size_t>(1, host.size() / apps_.size());
    for (const auto& [id, spec] : apps_) {
      for (std::size_t k = 0; k < each; ++k) appCpus_[id].push_back(host[(next + k) % host.size()]);
      next += each;
    }
  }
  // Host cores no app holds join the BE jobs.
  for (std::size_t k = std::min(next, host.size()); k < host.size(); ++k) beCpus_.push_back(host[k]);
  beCpus_.insert(beCpus_.end(), rest.begin(), rest.end());
  std::sort(beCpus_.begin(), beCpus_.end());
}

void ColocationPolicy::start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                             std::vector<Decision>& out) {
  for (const auto& [id, spec] : apps) arrive(id, spec, now, out);
}

void ColocationPolicy::arrive(AppId app, const AppSpec& spec, const Observation& now,
                              std::vector<Decision>& out) {
  apps_[app] = spec;
  assignCores();
  for (const auto& [id, cpus] : appCpus_) {
    Decision d = event(now.tNs, id == app ? "initial" : "donate", id, apps_.at(id).name,
                       "host cores split between the LC apps, memory on stack " +
                           std::to_string(lcStack_) + "; the BE jobs get the other cores");
    d.toCores = cpus;
    out.push_back(std::move(d));
  }
  onArrive(app, spec, now, out);
}

void ColocationPolicy::exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) {
  auto it = apps_.find(app);
  if (it == apps_.end()) return;
  Decision d = event(tNs, "exit", app, it->second.name, "");
  d.fromCores = appCpus_[app];
  out.push_back(std::move(d));
  apps_.erase(it);
  assignCores();
  onExit(app);
}

Assignment ColocationPolicy::assignment() const {
  Assignment as;
  as.exclusive = true;
  as.appCpus = appCpus_;
  as.beCpus = beCpus_;
  // CC gathers each LC app's memory on this stack, which the BE jobs on its PIM cores
  // share: the interference these policies manage.
  for (const auto& [id, cpus] : appCpus_) as.residentStack[id] = lcStack_;
  decorate(as);
  return as;
}

}  // namespace pimcloud
