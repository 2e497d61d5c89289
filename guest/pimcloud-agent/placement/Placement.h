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
enum class StaticPlacement { FirstTouch, Concentrated, Interleave };

std::optional<StaticPlacement> parseStaticPlacement(const std::string& name);  // ft|cc|il
const char* toString(StaticPlacement placement);

struct MemPolicySpec {
  enum class Mode { Default, Preferred, Interleave };
  Mode mode = Mode::Default;
  std::vector<int> nodes;
};

MemPolicySpec memPolicyFor(StaticPlacement placement, int residentStack, int stacks);

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
