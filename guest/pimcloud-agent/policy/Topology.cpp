#include "policy/Topology.h"

#include <algorithm>

namespace pimcloud {

const char* toString(CoreType type) { return type == CoreType::Host ? "host" : "pim"; }

int Topology::hostCores() const {
  return static_cast<int>(std::count_if(cores.begin(), cores.end(),
                                        [](const Core& c) { return c.type == CoreType::Host; }));
}

int Topology::pimCores() const { return static_cast<int>(cores.size()) - hostCores(); }

int Topology::pimCoresOn(int stack) const {
  return static_cast<int>(std::count_if(cores.begin(), cores.end(), [stack](const Core& c) {
    return c.type == CoreType::Pim && c.stack == stack;
  }));
}

int Topology::coreByCpu(int cpu) const {
  for (const Core& c : cores) {
    if (c.cpu == cpu) return c.id;
  }
  return -1;
}

int Topology::nodeOf(int stack) const {
  if (stack == 0) return firstStackNode == 1 ? 0 : -1;
  if (stack < 1 || stack > stacks) return -1;
  return firstStackNode + stack - 1;
}

int Topology::stackOf(int node) const {
  if (node == 0 && firstStackNode == 1) return 0;
  const int stack = node - firstStackNode + 1;
  return stack >= 1 && stack <= stacks ? stack : -1;
}

Topology Topology::make(int hostCores, int stacks, int pimPerStack, std::uint64_t bytesPerStack) {
  Topology t;
  t.stacks = stacks;
  t.stackBytes.assign(static_cast<std::size_t>(stacks) + 1, bytesPerStack);
  t.stackBytes[0] = 0;
  int cpu = 0;
  for (int i = 0; i < hostCores; ++i, ++cpu) {
    t.cores.push_back({cpu, cpu, CoreType::Host, 0});
  }
  for (int s = 1; s <= stacks; ++s) {
    for (int i = 0; i < pimPerStack; ++i, ++cpu) {
      t.cores.push_back({cpu, cpu, CoreType::Pim, s});
    }
  }
  return t;
}

Topology Topology::paper() { return make(4, 2, 8); }

}  // namespace pimcloud
