#include "placement/Placement.h"

#include <algorithm>

namespace pimcloud {

std::optional<StaticPlacement> parseStaticPlacement(const std::string& name) {
  if (name == "ft") return StaticPlacement::FirstTouch;
  if (name == "cc") return StaticPlacement::Concentrated;
  if (name == "il") return StaticPlacement::Interleave;
  if (name == "fast-preferred") return StaticPlacement::FastPreferred;
  if (name == "fast-always") return StaticPlacement::FastAlways;
  if (name == "slow-preferred") return StaticPlacement::SlowPreferred;
  if (name == "slow-always") return StaticPlacement::SlowAlways;
  return std::nullopt;
}

bool isTiered(StaticPlacement placement) {
  return placement == StaticPlacement::FastPreferred || placement == StaticPlacement::FastAlways ||
         placement == StaticPlacement::SlowPreferred || placement == StaticPlacement::SlowAlways;
}

const char* toString(StaticPlacement placement) {
  switch (placement) {
    case StaticPlacement::FirstTouch: return "ft";
    case StaticPlacement::Concentrated: return "cc";
    case StaticPlacement::Interleave: return "il";
    case StaticPlacement::FastPreferred: return "fast-preferred";
    case StaticPlacement::FastAlways: return "fast-always";
    case StaticPlacement::SlowPreferred: return "slow-preferred";
    case StaticPlacement::SlowAlways: return "slow-always";
  }
  return "?";
}

MemPolicySpec memPolicyFor(StaticPlacement placement, int residentStack, int stacks,
                           int slowNode, int firstStack) {
  MemPolicySpec spec;
  switch (placement) {
    case StaticPlacement::FirstTouch:
      spec.mode = MemPolicySpec::Mode::Default;
      break;
    case StaticPlacement::Concentrated:
      spec.mode = MemPolicySpec::Mode::Preferred;
      spec.nodes = {residentStack};
      break;
    case StaticPlacement::Interleave:
      spec.mode = MemPolicySpec::Mode::Interleave;
      for (int s = 0; s < stacks; ++s) spec.nodes.push_back(firstStack + s);
      break;
    case StaticPlacement::FastPreferred:
    case StaticPlacement::FastAlways:
      spec.mode = placement == StaticPlacement::FastAlways ? MemPolicySpec::Mode::Bind
                                                           : MemPolicySpec::Mode::PreferredMany;
      for (int s = 0; s < stacks; ++s) spec.nodes.push_back(firstStack + s);
      // With a far node, preferred-many would spill to node 0 (the allocating CPU's
      // zonelist) before it; binding to the stacks and the far node keeps that order
      // (the far node is the farthest from every CPU) and leaves node 0 out.
      if (placement == StaticPlacement::FastPreferred && slowNode != kHostSlowNode) {
        spec.mode = MemPolicySpec::Mode::Bind;
        spec.nodes.push_back(slowNode);
      }
      break;
    case StaticPlacement::SlowPreferred:
    case StaticPlacement::SlowAlways:
      spec.mode = placement == StaticPlacement::SlowAlways ? MemPolicySpec::Mode::Bind
                                                           : MemPolicySpec::Mode::Preferred;
      spec.nodes = {slowNode};
      break;
  }
  return spec;
}

MigrationPlan planThreadMigration(const std::vector<PageInfo>& hottestFirst, int threads,
                                  std::uint64_t targetFreeBytes, std::uint64_t reserveBytes,
                                  std::size_t pageBytes) {
  MigrationPlan plan;
  if (hottestFirst.empty() || pageBytes == 0) return plan;
  const std::size_t t = static_cast<std::size_t>(std::max(threads, 1));
  const std::size_t share = (hottestFirst.size() + t - 1) / t;
  const std::uint64_t room = targetFreeBytes > reserveBytes ? targetFreeBytes - reserveBytes : 0;
  const std::size_t fit = static_cast<std::size_t>(room / pageBytes);
  const std::size_t take = std::min(share, fit);
  plan.limitedByMemory = fit < share;
  plan.pages.reserve(take);
  for (std::size_t i = 0; i < take; ++i) plan.pages.push_back(hottestFirst[i].addr);
  return plan;
}

}  // namespace pimcloud
