// Data placement decisions (paper III-D, IV-C): which memory policy an app starts with,
// and which pages move when a remote PIM core comes or goes. What to move, never how:
// the backend moves the pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/Machine.h"

namespace pimcloud {

// Static placement at launch.
//  FT: first touch (the kernel's local allocation).
//  CC: concentrated on the resident stack; when it fills, the kernel spills to the next
//      node, and with equal SLIT distances its fallback order is i+1, i+2, ..., M, 1, ...
//      (build_zonelists prefers the next node on ties), the paper's spill order.
//  IL: interleaved over every stack.
// Tiered allocation (seed 004, "Allocation Policies Matter for Hybrid Memory Systems"), the
// fast tier being the stacks (nodes 1..M) and the slow tier the capacity DDR of node 0
// (the `tiered` preset) or a CPU-less far-memory node after the stacks (`tiered-far-mini`):
// its DRAM-Preferred, DRAM-Always, PM-Preferred and PM-Always.
//  fast-preferred: the stacks first, the slow node when they are full (MPOL_PREFERRED_MANY
//                  with node 0 slow; with a far node, MPOL_BIND to the stacks and the far
//                  node, whose zonelist order is the same and never spills to node 0).
//  fast-always:    the stacks only (MPOL_BIND); the agent demotes cold pages to the slow
//                  node when a stack runs short (EngineOptions::tiering).
//  slow-preferred: the slow node first, then the kernel's fallback order (MPOL_PREFERRED).
//  slow-always:    the slow node only (MPOL_BIND): the kernel's OOM killer ends a service
//                  that outgrows it, as the paper warns; the run says so.
enum class StaticPlacement {
  FirstTouch, Concentrated, Interleave, FastPreferred, FastAlways, SlowPreferred, SlowAlways
};

// ft|cc|il|fast-preferred|fast-always|slow-preferred|slow-always
std::optional<StaticPlacement> parseStaticPlacement(const std::string& name);
const char* toString(StaticPlacement placement);
bool isTiered(StaticPlacement placement);
inline constexpr int kHostSlowNode = 0;  // the default slow tier: the host node's DDR

struct MemPolicySpec {
  enum class Mode { Default, Preferred, Interleave, Bind, PreferredMany };
  Mode mode = Mode::Default;
  std::vector<int> nodes;
};

// slowNode: 0 (the host node's DDR) or a far-memory node numbered after the stacks.
// firstStack: the node of the first stack, 1 with a host node, 0 on a PIM-only system
// (arch9); residentStack is a node.
MemPolicySpec memPolicyFor(StaticPlacement placement, int residentStack, int stacks,
                           int slowNode = kHostSlowNode, int firstStack = 1);

// Pages of one thread to send to a remote stack: its share of the app's pages on the
// resident stack (Linux cannot tell which thread owns a page, so a thread's share is
// pages / threads), hottest first, only into free memory above a reserve.
struct MigrationPlan {
  std::vector<std::uintptr_t> pages;
  bool limitedByMemory = false;  // stopped because the target stack had no more room
};

MigrationPlan planThreadMigration(const std::vector<PageInfo>& hottestFirst, int threads,
                                  std::uint64_t targetFreeBytes, std::uint64_t reserveBytes,
                                  std::size_t pageBytes);

}  // namespace pimcloud
