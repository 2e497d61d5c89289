// Reading the kernel's NUMA view: CPU lists, per-node memory, and the topology the
// policies need (node 0 = host cores, node k >= 1 = stack k with its PIM cores; on a
// PIM-only system node k - 1 = stack k).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "policy/Topology.h"

namespace pimcloud {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; nullopt if malformed.
std::optional<std::vector<int>> parseCpuList(const std::string& text);
// {0,1,2,3,8} -> "0-3,8"
std::string formatCpuList(std::vector<int> cpus);

struct NodeInfo {
  int node = 0;
  std::vector<int> cpus;
  std::uint64_t totalBytes = 0;
  std::uint64_t freeBytes = 0;
};

// Nodes under <sysfsRoot>/devices/system/node; errors name the file.
std::map<int, NodeInfo> readNodes(const std::string& sysfsRoot, std::string& error);
// "Node 1 MemFree:  123 kB" lines -> bytes of the given key.
std::optional<std::uint64_t> meminfoBytes(const std::string& text, const std::string& key);
// Topology from the nodes; nullopt (with error) if there is no host CPU or no stack.
// farNode > 0 names a CPU-less far-memory node after the stacks, which is not a stack.
// firstStack: the node of stack 1; 1 with the host cores on node 0, 0 on a PIM-only
// system (arch9), whose nodes 0..M-1 are stacks 1..M and which has no host cores.
std::optional<Topology> topologyFromNodes(const std::map<int, NodeInfo>& nodes, std::string& error,
                                          int farNode = 0, int firstStack = 1);

bool readFile(const std::string& path, std::string& out);

}  // namespace pimcloud
