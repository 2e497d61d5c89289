// The machine as the policy core sees it: cores with a type and a stack, and stacks
// with memory. Stacks are numbered 1..M everywhere in the policies; stack k is NUMA node
// firstStackNode + k - 1: node k with the host cores on node 0, node k - 1 on a PIM-only
// system (no host node). The Machine speaks node ids: convert with nodeOf / stackOf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud {

enum class CoreType { Host, Pim };

const char* toString(CoreType type);

struct Core {
  int id = 0;    // index into Topology::cores
  int cpu = 0;   // Linux CPU number
  CoreType type = CoreType::Host;
  int stack = 0;  // 0 for host cores, 1..M for PIM cores
};

struct Topology {
  std::vector<Core> cores;
  int stacks = 0;                         // M
  std::vector<std::uint64_t> stackBytes;  // index 1..M (index 0 unused)
  int firstStackNode = 1;                 // node of stack 1: 0 on a PIM-only system

  int hostCores() const;
  int pimCores() const;
  int pimCoresOn(int stack) const;
  const Core& core(int id) const { return cores.at(static_cast<std::size_t>(id)); }
  int coreByCpu(int cpu) const;  // -1 if none
  // Stack 1..M -> its NUMA node; stack 0 (the host) -> node 0, or -1 without a host node.
  int nodeOf(int stack) const;
  // NUMA node -> stack 1..M; 0 for the host node; -1 for neither (a far-memory node).
  int stackOf(int node) const;

  // The paper's server (Table I): 4 host cores (CPUs 0-3) and 2 stacks x 8 PIM cores
  // (CPUs 4-11 on stack 1, 12-19 on stack 2), 8 GiB per stack.
  static Topology paper();
  // hostCores host CPUs first, then pimPerStack CPUs for each of `stacks` stacks.
  static Topology make(int hostCores, int stacks, int pimPerStack,
                       std::uint64_t bytesPerStack = 8ULL << 30);
};

}  // namespace pimcloud
