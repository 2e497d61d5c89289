#include "policy/Rule.h"

#include <algorithm>

namespace pimcloud {

bool pimcloudRuleHolds(const CoreMap& cores, const std::vector<AppId>& ranking) {
  bool earlierHasPim = false;
  for (AppId app : ranking) {
    const CoreCount n = cores.count(app);
    if (earlierHasPim && n.host > 0) return false;
    earlierHasPim = earlierHasPim || n.pim > 0;
  }
  return true;
}

std::vector<AppId> rankByPreference(std::vector<RankedApp> apps) {
  std::stable_sort(apps.begin(), apps.end(), [](const RankedApp& a, const RankedApp& b) {
    const double ra = a.spec->preference();
    const double rb = b.spec->preference();
    if (ra != rb) return ra > rb;
    if (a.spec->name != b.spec->name) return a.spec->name < b.spec->name;
    return a.id < b.id;
  });
  std::vector<AppId> out;
  out.reserve(apps.size());
  for (const RankedApp& a : apps) out.push_back(a.id);
  return out;
}

}  // namespace pimcloud
