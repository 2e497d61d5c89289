#include "tools/HotSet.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "backend/HwCounters.h"
#include "backend/NumaCalls.h"
#include "backend/Sysfs.h"

namespace pimcloud {
namespace {

constexpr std::size_t kPage = 4096;
constexpr unsigned long kMpolBind = 2;  // MPOL_BIND

void flush(const volatile char* p) { asm volatile("clflush (%0)" ::"r"(p) : "memory"); }

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
}


// What each hot page is meant to be: shared (both CPUs touch it) and/or written.
bool sharedPage(int i) { return i % 4 == 0; }
bool writtenPage(int i) { return i % 5 == 0; }

struct Region {
  int node = 0;
  char* base = nullptr;
  int pages = 0;
};

Region allocate(int node, int pages) {
  Region r{node, nullptr, pages};
  void* p = ::mmap(nullptr, static_cast<std::size_t>(pages) * kPage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return r;
  const NodeMask mask = NodeMask::of({node});
  ::syscall(SYS_mbind, p, static_cast<std::size_t>(pages) * kPage, kMpolBind,
            mask.words.data(), mask.maxnode(), 0UL);
  r.base = static_cast<char*>(p);
  for (int i = 0; i < pages; ++i) r.base[static_cast<std::size_t>(i) * kPage] = 1;  // place it
  // The kernel zeroed each page through the caches: write every dirty line back now, or
  // its later eviction would mark pages meant to stay read-only as written.
  for (std::size_t at = 0; at < static_cast<std::size_t>(pages) * kPage; at += 64) {
    flush(r.base + at);
  }
  return r;
}

// One pass of one CPU over the hot pages: each access flushed first so it misses.
void hammer(const std::vector<Region>& regions, int hot, bool pimSide, int rounds) {
  volatile std::uint64_t sink = 0;
  for (int round = 0; round < rounds; ++round) {
    for (const Region& r : regions) {
      for (int i = 0; i < hot; ++i) {
        // The PIM CPU touches only the shared pages; the host CPU all of them.
        if (pimSide && !sharedPage(i)) continue;
        volatile char* line = r.base + static_cast<std::size_t>(i) * kPage +
                              static_cast<std::size_t>((round * 64) % kPage);
        flush(line);
        if (writtenPage(i) && !pimSide) {
          *line = static_cast<char>(round);
          flush(line);  // the dirty line goes back to memory: a write reaches it
        } else {
          sink = sink + static_cast<std::uint64_t>(*line);
          if (!pimSide) {
            // A second line: a read-only page reaches memory twice a round, as a written
            // one does (its read for ownership and its write-back).
            volatile char* next = r.base + static_cast<std::size_t>(i) * kPage +
                                  static_cast<std::size_t>((round * 64 + kPage / 2) % kPage);
            flush(next);
            sink = sink + static_cast<std::uint64_t>(*next);
          }
        }
      }
    }
  }
}

// The frame of every page of each region, looked up through one open pagemap (on the
// detailed cores each open costs microseconds).
std::vector<std::vector<std::uint64_t>> framesOf(const std::vector<Region>& regions) {
  const int pagemap = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  std::vector<std::vector<std::uint64_t>> frames;
  for (const Region& r : regions) {
    frames.emplace_back();
    for (int i = 0; i < r.pages; ++i)
      frames.back().push_back(frameOf(r.base + static_cast<std::size_t>(i) * kPage, pagemap));
  }
  if (pagemap >= 0) ::close(pagemap);
  return frames;
}

// Every page of the sets with its frame and what it is meant to be, so that the driver's
// answer can be read against it outside the guest.
void writeFrames(const HotSetOptions& o, const std::vector<Region>& regions,
                 const std::vector<std::vector<std::uint64_t>>& frames) {
  std::FILE* out = std::fopen(o.framesFile.c_str(), "w");
  if (out == nullptr) {
    std::fprintf(stderr, "pimcloud-hw hotset: cannot write --frames %s: %s\n",
                 o.framesFile.c_str(), std::strerror(errno));
    return;
  }
  for (std::size_t k = 0; k < regions.size(); ++k) {
    for (int i = 0; i < regions[k].pages; ++i) {
      const char* kind = i >= o.hotPages ? "cold"
                         : sharedPage(i) && writtenPage(i) ? "shared-rw"
                         : sharedPage(i) ? "shared-ro"
                         : writtenPage(i) ? "private-rw" : "private-ro";
      std::fprintf(out, "%d %d %s %llx\n", regions[k].node, i, kind,
                   static_cast<unsigned long long>(frames[k][static_cast<std::size_t>(i)]));
    }
  }
  std::fclose(out);
}

}  // namespace

std::uint64_t frameOf(const void* address, int pagemap) {
  const int fd = pagemap >= 0 ? pagemap : ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::uint64_t entry = 0;
  const auto at = static_cast<off_t>(reinterpret_cast<std::uintptr_t>(address) / kPage * 8);
  const bool read = ::pread(fd, &entry, sizeof(entry), at) == sizeof(entry);
  if (pagemap < 0) ::close(fd);
  return read && ((entry >> 63) & 1) ? entry & ((std::uint64_t{1} << 55) - 1) : 0;
}

int runHotSet(const HotSetOptions& o, double minPrecision) {
  std::string error;
  const auto hw = HwCounters::open(error);
  if (!hw) {
    std::printf("{\"error\": \"%s\"}\n", error.c_str());
    return 1;
  }
  int pimCpu = o.pimCpu;
  if (pimCpu < 0) {
    const auto nodes = readNodes("/sys", error);
    const auto it = nodes.find(o.nodes.front());
    if (it == nodes.end() || it->second.cpus.empty()) {
      std::printf("{\"error\": \"node %d has no CPU; give --pim-cpu\"}\n", o.nodes.front());
      return 1;
    }
    pimCpu = it->second.cpus.front();
  }
  // This thread sets up, reads the frames and asks the driver from the host CPU: its own
  // kernel work (page faults, page tables, pagemap reads, the driver's answers) then
  // lands on the host's memory, not among the stacks' counted frames. Every frame is
  // looked up before the counting starts, for the same reason.
  pin(o.hostCpu);
  std::vector<Region> regions;
  for (int node : o.nodes) {
    Region r = allocate(node, o.hotPages + o.coldPages);
    if (r.base == nullptr) {
      std::printf("{\"error\": \"cannot map pages on node %d\"}\n", node);
      return 1;
    }
    regions.push_back(r);
  }
  const auto frames = framesOf(regions);
  std::vector<std::map<std::uint64_t, int>> hotIndex(regions.size());  // pfn -> hot index
  for (std::size_t k = 0; k < regions.size(); ++k) {
    for (int i = 0; i < o.hotPages; ++i) hotIndex[k][frames[k][static_cast<std::size_t>(i)]] = i;
  }
  if (!o.framesFile.empty()) writeFrames(o, regions, frames);
  // Both threads start, pin themselves and fault their stacks in before the reset (the
  // PIM thread's stack is on its stack's memory); the reset releases them.
  std::atomic<int> pinned{0};
  std::atomic<bool> go{false};
  const auto worker = [&](int cpu, bool pimSide) {
    pin(cpu);
    ++pinned;
    while (!go.load()) std::this_thread::yield();
    hammer(regions, o.hotPages, pimSide, o.rounds);
  };
  std::thread host(worker, o.hostCpu, false);
  std::thread pim(worker, pimCpu, true);
  while (pinned.load() < 2) std::this_thread::yield();
  // Forget what the set-up did: counts start from the hammering.
  for (int node : o.nodes) hw->ask("reset " + std::to_string(node));
  go = true;
  host.join();
  pim.join();
  // The cold pages once each, as background.
  for (const Region& r : regions) {
    for (int i = o.hotPages; i < r.pages; ++i) {
      volatile char* line = r.base + static_cast<std::size_t>(i) * kPage;
      flush(line);
      (void)*line;
    }
  }
  std::vector<std::optional<HotPages>> answers;
  std::vector<std::string> errors(regions.size());
  for (std::size_t k = 0; k < regions.size(); ++k) {
    answers.push_back(hw->hottest(o.hotPages, regions[k].node, errors[k]));
  }
  bool ok = true;
  std::printf("{\"memories\": [");
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const Region& r = regions[k];
    const auto& answer = answers[k];
    const std::string& error = errors[k];
    int hits = 0, sharedRight = 0, writtenRight = 0;
    if (answer) {
      for (const HotPage& p : answer->pages) {
        const auto it = hotIndex[k].find(p.pfn);
        if (it == hotIndex[k].end()) continue;
        ++hits;
        sharedRight += p.shared == sharedPage(it->second);
        writtenRight += p.written == writtenPage(it->second);
      }
    }
    const double precision = answer && !answer->pages.empty()
                                 ? static_cast<double>(hits) / static_cast<double>(answer->pages.size())
                                 : 0.0;
    ok = ok && precision >= minPrecision;
    std::printf("%s{\"node\": %d, \"asked\": %d, \"answered\": %zu, \"hits\": %d, "
                "\"precision\": %.4f, \"shared_right\": %d, \"written_right\": %d, "
                "\"scan_ps\": %llu%s%s%s}",
                k ? ", " : "", r.node, o.hotPages, answer ? answer->pages.size() : 0, hits,
                precision, sharedRight, writtenRight,
                static_cast<unsigned long long>(answer ? answer->scanPs : 0),
                answer ? "" : ", \"error\": \"", answer ? "" : error.c_str(), answer ? "" : "\"");
  }
  std::printf("], \"host_cpu\": %d, \"pim_cpu\": %d, \"ok\": %s}\n", o.hostCpu, pimCpu,
              ok ? "true" : "false");
  return ok ? 0 : 1;
}

}  // namespace pimcloud
