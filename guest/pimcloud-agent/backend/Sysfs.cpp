#include "backend/Sysfs.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

namespace pimcloud {

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

std::optional<std::vector<int>> parseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return cpus;
  std::stringstream s(t);
  std::string part;
  while (std::getline(s, part, ',')) {
    const auto dash = part.find('-');
    try {
      std::size_t used = 0;
      if (dash == std::string::npos) {
        const int v = std::stoi(part, &used);
        if (used != part.size() || v < 0) return std::nullopt;
        cpus.push_back(v);
      } else {
        const std::string a = part.substr(0, dash), b = part.substr(dash + 1);
        std::size_t ua = 0, ub = 0;
        const int lo = std::stoi(a, &ua), hi = std::stoi(b, &ub);
        if (ua != a.size() || ub != b.size() || lo < 0 || hi < lo) return std::nullopt;
        for (int v = lo; v <= hi; ++v) cpus.push_back(v);
      }
    } catch (...) {
      return std::nullopt;
    }
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string formatCpuList(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

std::optional<std::uint64_t> meminfoBytes(const std::string& text, const std::string& key) {
  std::stringstream s(text);
  std::string line;
  while (std::getline(s, line)) {
    const auto k = line.find(key + ":");
    if (k == std::string::npos) continue;
    std::stringstream rest(line.substr(k + key.size() + 1));
    std::uint64_t value = 0;
    std::string unit;
    if (!(rest >> value)) return std::nullopt;
    rest >> unit;
    return unit == "kB" ? value * 1024 : value;
  }
  return std::nullopt;
}

std::map<int, NodeInfo> readNodes(const std::string& sysfsRoot, std::string& error) {
  std::map<int, NodeInfo> nodes;
  const std::string dir = sysfsRoot + "/devices/system/node";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    error = dir + ": cannot list NUMA nodes (is sysfs mounted? is NUMA on in the kernel?)";
    return nodes;
  }
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("node", 0) != 0 || name.size() <= 4 ||
        !std::all_of(name.begin() + 4, name.end(), ::isdigit)) {
      continue;
    }
    NodeInfo n;
    n.node = std::stoi(name.substr(4));
    std::string text;
    const std::string base = dir + "/" + name;
    if (readFile(base + "/cpulist", text)) {
      auto cpus = parseCpuList(text);
      if (!cpus) {
        error = base + "/cpulist: cannot parse \"" + text + "\"";
        continue;
      }
      n.cpus = *cpus;
    }
    if (readFile(base + "/meminfo", text)) {
      n.totalBytes = meminfoBytes(text, "MemTotal").value_or(0);
      n.freeBytes = meminfoBytes(text, "MemFree").value_or(0);
    }
    nodes[n.node] = n;
  }
  closedir(d);
  return nodes;
}

std::optional<Topology> topologyFromNodes(const std::map<int, NodeInfo>& nodes, std::string& error,
                                          int farNode, int firstStack) {
  Topology t;
  t.firstStackNode = firstStack;
  int id = 0;
  if (firstStack == 1) {
    auto host = nodes.find(0);
    if (host == nodes.end() || host->second.cpus.empty()) {
      error = "NUMA node 0 has no CPUs; the agent expects the host cores on node 0 "
              "(set placement.first_stack to 0 on a PIM-only system, or give the topology "
              "in the config instead)";
      return std::nullopt;
    }
    for (int cpu : host->second.cpus) t.cores.push_back({id++, cpu, CoreType::Host, 0});
  } else if (firstStack != 0) {
    error = "the first stack's node is " + std::to_string(firstStack) +
            "; set placement.first_stack to 1 (host cores on node 0) or 0 (a PIM-only system)";
    return std::nullopt;
  }
  t.stackBytes.push_back(0);
  if (farNode > 0) {
    const auto far = nodes.find(farNode);
    if (far == nodes.end() || !far->second.cpus.empty() || far != std::prev(nodes.end())) {
      error = "the slow node " + std::to_string(farNode) +
              " is not a CPU-less node after the stacks; the kernel's nodes are 0.." +
              std::to_string(nodes.rbegin()->first) + " (set placement.slow_node to 0 or to "
              "the far-memory node)";
      return std::nullopt;
    }
  }
  for (const auto& [node, info] : nodes) {
    if ((firstStack == 1 && node == 0) || (farNode > 0 && node == farNode)) continue;
    // Stack k is node firstStack + k - 1: the next stack's node follows the last one's.
    if (node != firstStack + t.stacks) {
      error = firstStack == 1
                  ? "NUMA node " + std::to_string(node) + " follows node " +
                        std::to_string(t.stacks) + "; stacks must be numbered 1..M without gaps"
                  : "NUMA node " + std::to_string(node) + " follows node " +
                        std::to_string(t.stacks - 1) +
                        "; with placement.first_stack 0 the stacks must be nodes 0..M-1 "
                        "without gaps";
      return std::nullopt;
    }
    ++t.stacks;
    t.stackBytes.push_back(info.totalBytes);
    for (int cpu : info.cpus) t.cores.push_back({id++, cpu, CoreType::Pim, t.stacks});
  }
  if (t.stacks == 0) {
    error = firstStack == 1 ? "only NUMA node 0 exists; the agent needs at least one stack node"
                            : "no NUMA node is a stack; the agent needs at least one stack node";
    return std::nullopt;
  }
  return t;
}

}  // namespace pimcloud
