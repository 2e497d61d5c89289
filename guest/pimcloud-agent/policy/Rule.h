// The PIMCloud rule (IV-B): with apps ranked by decreasing R, every app but one (the
// middle app) holds a single core type; apps before it hold host cores only, apps after
// it PIM cores only. Equivalently: no app holds PIM cores while a later app holds host
// cores.
#pragma once

#include <vector>

#include "policy/CoreMap.h"
#include "policy/Types.h"

namespace pimcloud {

bool pimcloudRuleHolds(const CoreMap& cores, const std::vector<AppId>& ranking);

// Apps by decreasing R (maxRpsHost / maxRpsPim); ties by name, then id, so the order is
// deterministic.
struct RankedApp {
  AppId id;
  const AppSpec* spec;
};
std::vector<AppId> rankByPreference(std::vector<RankedApp> apps);

}  // namespace pimcloud
