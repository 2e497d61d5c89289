// The core layout of the seed papers' colocation policies (BALM, seed 003's controller):
// the LC apps share the host cores out, the best-effort jobs get every other core.
#pragma once

#include <map>
#include <vector>

#include "policy/Topology.h"
#include "policy/Types.h"

namespace pimcloud {

struct HostSplit {
  std::map<AppId, std::vector<int>> appCpus;
  std::vector<int> beCpus;  // sorted
};

// `perApp` host cores per LC app in id order (0: an even split, at least one each); more
// apps than host cores share them round robin; host cores no app holds join the BE jobs.
HostSplit splitHostCores(const Topology& topology, const std::vector<AppId>& apps, int perApp);

}  // namespace pimcloud
