#include "policy/HostSplit.h"

#include <algorithm>

namespace pimcloud {

HostSplit splitHostCores(const Topology& topology, const std::vector<AppId>& apps, int perApp) {
  std::vector<int> host;
  std::vector<int> rest;
  for (const Core& c : topology.cores) (c.type == CoreType::Host ? host : rest).push_back(c.cpu);
  HostSplit out;
  std::size_t next = 0;
  if (!apps.empty() && !host.empty()) {
    const std::size_t each = perApp > 0 ? static_cast<std::size_t>(perApp)
                                        : std::max<std::size_t>(1, host.size() / apps.size());
    for (AppId id : apps) {
      for (std::size_t k = 0; k < each; ++k) out.appCpus[id].push_back(host[(next + k) % host.size()]);
      next += each;
    }
  }
  for (std::size_t k = std::min(next, host.size()); k < host.size(); ++k) out.beCpus.push_back(host[k]);
  out.beCpus.insert(out.beCpus.end(), rest.begin(), rest.end());
  std::sort(out.beCpus.begin(), out.beCpus.end());
  return out;
}

}  // namespace pimcloud
