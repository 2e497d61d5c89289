#include "policy/CoreMap.h"

namespace pimcloud {

CoreMap::CoreMap(const Topology& topology)
    : topology_(&topology),
      owner_(topology.cores.size(), kBePool),
      acquired_(topology.cores.size(), 0) {}

void CoreMap::give(int core, AppId to) {
  owner_.at(static_cast<std::size_t>(core)) = to;
  acquired_.at(static_cast<std::size_t>(core)) = ++clock_;
}

void CoreMap::restore(int core, AppId owner, std::uint64_t acquiredAt) {
  owner_.at(static_cast<std::size_t>(core)) = owner;
  acquired_.at(static_cast<std::size_t>(core)) = acquiredAt;
}

std::vector<int> CoreMap::coresOf(AppId app) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < owner_.size(); ++i) {
    if (owner_[i] == app) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::vector<int> CoreMap::cpusOf(AppId app) const {
  std::vector<int> out;
  for (int core : coresOf(app)) out.push_back(topology_->core(core).cpu);
  return out;
}

CoreCount CoreMap::count(AppId app) const {
  CoreCount n;
  for (int core : coresOf(app)) {
    (topology_->core(core).type == CoreType::Host ? n.host : n.pim)++;
  }
  return n;
}

int CoreMap::pimOn(AppId app, int stack) const {
  int n = 0;
  for (int core : coresOf(app)) {
    const Core& c = topology_->core(core);
    if (c.type == CoreType::Pim && c.stack == stack) ++n;
  }
  return n;
}

void CoreMap::releaseAll(AppId app) {
  for (int core : coresOf(app)) give(core, kBePool);
}

}  // namespace pimcloud
