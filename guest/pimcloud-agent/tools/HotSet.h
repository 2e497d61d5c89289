// `pimcloud-hw hotset`: the hardware counters' acceptance test run inside the guest. A
// known hot set over two memories (some frames shared between a host and a PIM CPU,
// some written) is hit far more often than a cold set; every access is flushed from the
// caches first so that it reaches memory, where the counters are, and every hot page
// reaches memory at least twice a round. Then the driver's hottest frames of each memory
// are compared with the hot set (precision, types). The test's own thread stays on the
// host CPU and looks every frame up before the counting starts: run from a PIM core, its
// kernel work (pagemap reads, page tables, the stacks' own kernel memory) had made tens
// of thousands of counted accesses to frames outside the set, which outranked the hot
// read-only pages (precision 0.40 on paper, 0.0 and 0.78 on mini).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud {

struct HotSetOptions {
  std::vector<int> nodes = {1, 2};  // memories that hold the sets
  int hotPages = 200;               // per memory
  int coldPages = 2000;             // per memory
  int hostCpu = 0;
  int pimCpu = -1;                  // -1: the first CPU of the first memory's node
  int rounds = 100;                 // passes over the hot set per thread
  std::string framesFile;           // if set: every page's frame, for a closer look
};

// The physical frame behind an address of this process, or 0 (pagemap needs root);
// `pagemap`: an open /proc/self/pagemap to read, or -1 to open one for this call.
std::uint64_t frameOf(const void* address, int pagemap = -1);

// Runs the test, prints one JSON object (per memory: precision, types right, scan time)
// and returns 0 when every memory's precision is at least `minPrecision`.
int runHotSet(const HotSetOptions& options, double minPrecision);

}  // namespace pimcloud
