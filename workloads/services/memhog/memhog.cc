// pimcloud-memhog: memory pressure on one NUMA node, for fault-injection scenarios.
//   pimcloud-memhog --node K --free-mib M [--step-mib S] [--sysfs /sys]
// Takes memory preferring node K (mmap + mbind MPOL_PREFERRED, every page written) until
// the node's MemFree (sysfs nodeK/meminfo) is at most M MiB, prints one JSON line
//   {"event":"filled","node":K,"held_mib":..,"free_mib":..,"stopped":".."}
// and holds it until SIGTERM/SIGINT. Preferred, not bound: near the node's watermarks the
// kernel gives pages from other nodes instead of calling the OOM killer (MPOL_BIND did,
// and killed the services beside it); the hog stops when a step no longer lowers the
// node's free memory, and says so in "stopped".
#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) { g_stop = 1; }

struct Options {
  int node = -1;
  std::uint64_t free_mib = 0;
  std::uint64_t step_mib = 16;
  std::string sysfs = "/sys";
};

Options parse(int argc, char** argv) {
  Options o;
  bool have_free = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag != "--node" && flag != "--free-mib" && flag != "--step-mib" && flag != "--sysfs") {
      throw std::invalid_argument("unknown option " + flag);
    }
    try {
      if (flag == "--node") o.node = std::stoi(value);
      else if (flag == "--free-mib") o.free_mib = std::stoull(value), have_free = true;
      else if (flag == "--step-mib") o.step_mib = std::stoull(value);
      else o.sysfs = value;
    } catch (const std::logic_error&) {
      throw std::invalid_argument(flag + " " + value + ": not a whole number");
    }
  }
  if (o.node < 0 || !have_free || o.step_mib < 1) {
    throw std::invalid_argument("give --node K (>= 0) and --free-mib M; --step-mib >= 1");
  }
  return o;
}

// MemFree of one node in bytes, from sysfs (nullopt: no such node).
std::optional<std::uint64_t> node_free_bytes(const Options& o) {
  std::ifstream in(o.sysfs + "/devices/system/node/node" + std::to_string(o.node) + "/meminfo");
  if (!in) return std::nullopt;
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find("MemFree:");
    if (at == std::string::npos) continue;
    std::istringstream rest(line.substr(at + 8));
    std::uint64_t kib = 0;
    rest >> kib;
    return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pimcloud-memhog: " << e.what()
              << "\nusage: pimcloud-memhog --node K --free-mib M [--step-mib S] [--sysfs /sys]\n";
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const std::uint64_t mib = 1 << 20, target = o.free_mib * mib;
  const long page = sysconf(_SC_PAGESIZE);
  std::uint64_t held = 0;
  std::string stopped = "reached --free-mib";
  while (!g_stop) {
    const auto free = node_free_bytes(o);
    if (!free) {
      std::cerr << "pimcloud-memhog: node " << o.node << " has no " << o.sysfs
                << "/devices/system/node/node" << o.node << "/meminfo; give a node the guest has\n";
      return 2;
    }
    if (*free <= target) break;
    const std::uint64_t want = std::min<std::uint64_t>(o.step_mib * mib, *free - target);
    const std::uint64_t bytes = std::max<std::uint64_t>(want / page * page, page);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::cerr << "pimcloud-memhog: mmap: " << std::strerror(errno) << '\n';
      break;
    }
    unsigned long mask[4] = {};
    mask[o.node / 64] = 1UL << (o.node % 64);
    if (mbind(p, bytes, MPOL_PREFERRED, mask, 4 * 64 + 1, 0) != 0) {
      std::cerr << "pimcloud-memhog: mbind to node " << o.node << ": " << std::strerror(errno) << '\n';
      return 1;
    }
    for (std::uint64_t at = 0; at < bytes; at += static_cast<std::uint64_t>(page)) {
      static_cast<volatile char*>(p)[at] = 1;  // first touch allocates on the bound node
    }
    held += bytes;
    // The kernel keeps its watermarks: once most of a step's pages come from elsewhere
    // (move_pages in query mode on a sample of them), stop.
    constexpr std::size_t kSample = 64;
    const std::uint64_t pages = bytes / static_cast<std::uint64_t>(page);
    void* sample[kSample];
    int where[kSample];
    std::size_t n = 0;
    for (; n < kSample && n < pages; ++n) {
      sample[n] = static_cast<char*>(p) + (n * pages / std::min<std::uint64_t>(kSample, pages)) *
                                              static_cast<std::uint64_t>(page);
    }
    if (move_pages(0, n, sample, nullptr, where, 0) == 0 &&
        std::count(where, where + n, o.node) * 2 < static_cast<long>(n)) {
      stopped = "the kernel gave most of a step from other nodes (its watermarks)";
      break;
    }
  }
  const auto free = node_free_bytes(o).value_or(0);
  std::printf("{\"event\":\"filled\",\"node\":%d,\"held_mib\":%.1f,\"free_mib\":%.1f,"
              "\"stopped\":\"%s\"}\n",
              o.node, static_cast<double>(held) / mib, static_cast<double>(free) / mib,
              stopped.c_str());
  std::fflush(stdout);
  while (!g_stop) pause();
  return 0;
}
