// The Linux backend against fixture trees (real files shaped like /proc, /sys and a
// cgroup v2 root), and the system calls against this machine's own kernel.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "backend/Cgroup.h"
#include "backend/LinuxMachine.h"
#include "backend/NumaCalls.h"
#include "backend/PageCacheView.h"
#include "backend/ProcMaps.h"
#include "backend/Sysfs.h"
#include "engine/DecisionLog.h"

namespace pimcloud {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = PIMCLOUD_AGENT_FIXTURES;

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/pimcloud-agent-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::string s;
  readFile(p.string(), s);
  return s;
}

TEST(Sysfs, CpuListsRoundTrip) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList(""), std::vector<int>{});
  EXPECT_FALSE(parseCpuList("3-1"));
  EXPECT_FALSE(parseCpuList("a"));
  EXPECT_EQ(formatCpuList({12, 4, 5, 6, 0}), "0,4-6,12");
}

TEST(Sysfs, PaperTopologyFromTheNodeTree) {
  std::string error;
  const auto nodes = readNodes(kFixtures + "/sys", error);
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_EQ(nodes.size(), 3U);
  EXPECT_EQ(nodes.at(2).freeBytes, 524288ULL * 1024);
  const auto t = topologyFromNodes(nodes, error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->hostCores(), 4);
  EXPECT_EQ(t->stacks, 2);
  EXPECT_EQ(t->pimCoresOn(1), 8);
  EXPECT_EQ(t->core(t->coreByCpu(12)).stack, 2);
  EXPECT_EQ(t->stackBytes[1], 8ULL << 30);
}

TEST(Sysfs, MissingHostNodeIsAnErrorThatSaysWhatToDo) {
  std::map<int, NodeInfo> nodes;
  nodes[1] = NodeInfo{1, {4, 5}, 0, 0};
  std::string error;
  EXPECT_FALSE(topologyFromNodes(nodes, error));
  EXPECT_NE(error.find("give the topology in the config"), std::string::npos);
}

// arch9: no host cores; Linux numbers the first stack node 0.
std::map<int, NodeInfo> pimOnlyNodes() {
  std::map<int, NodeInfo> nodes;
  nodes[0] = NodeInfo{0, {0, 1, 2, 3, 4, 5, 6, 7}, 4ULL << 30, 0};
  nodes[1] = NodeInfo{1, {8, 9, 10, 11, 12, 13, 14, 15}, 6ULL << 30, 0};
  return nodes;
}

TEST(Sysfs, PimOnlySystemHasItsFirstStackOnNodeZero) {
  std::string error;
  const auto t = topologyFromNodes(pimOnlyNodes(), error, 0, 0);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->hostCores(), 0);
  EXPECT_EQ(t->pimCores(), 16);
  EXPECT_EQ(t->stacks, 2);
  EXPECT_EQ(t->pimCoresOn(1), 8);
  EXPECT_EQ(t->pimCoresOn(2), 8);
  EXPECT_EQ(t->core(t->coreByCpu(3)).stack, 1);
  EXPECT_EQ(t->core(t->coreByCpu(12)).stack, 2);
  EXPECT_EQ(t->stackBytes.at(1), 4ULL << 30);
  EXPECT_EQ(t->stackBytes.at(2), 6ULL << 30);
  EXPECT_EQ(t->firstStackNode, 0);
  EXPECT_EQ(t->nodeOf(1), 0);
  EXPECT_EQ(t->nodeOf(2), 1);
  EXPECT_EQ(t->nodeOf(0), -1);  // no host node
  EXPECT_EQ(t->stackOf(0), 1);
  EXPECT_EQ(t->stackOf(1), 2);
  EXPECT_EQ(t->stackOf(2), -1);
  // Read as a host node (first stack 1), node 0's PIM cores were host cores.
  const auto asHost = topologyFromNodes(pimOnlyNodes(), error);
  ASSERT_TRUE(asHost) << error;
  EXPECT_EQ(asHost->hostCores(), 8);
  EXPECT_EQ(asHost->stacks, 1);
}

TEST(Sysfs, WithAHostNodeStackKIsNodeK) {
  const Topology t = Topology::paper();
  EXPECT_EQ(t.nodeOf(0), 0);
  EXPECT_EQ(t.nodeOf(2), 2);
  EXPECT_EQ(t.stackOf(0), 0);
  EXPECT_EQ(t.stackOf(1), 1);
  EXPECT_EQ(t.stackOf(3), -1);  // e.g. a far-memory node
}

TEST(Sysfs, PimOnlyNodeGapsAndAFarNodeAreHandled) {
  std::string error;
  auto nodes = pimOnlyNodes();
  nodes[2] = NodeInfo{2, {}, 8ULL << 30, 0};  // far memory after the stacks
  const auto t = topologyFromNodes(nodes, error, 2, 0);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->stacks, 2);
  EXPECT_EQ(t->stackOf(2), -1);
  nodes.erase(2);
  nodes[3] = NodeInfo{3, {16}, 1ULL << 30, 0};
  EXPECT_FALSE(topologyFromNodes(nodes, error, 0, 0));
  EXPECT_NE(error.find("nodes 0..M-1 without gaps"), std::string::npos) << error;
  EXPECT_FALSE(topologyFromNodes({}, error, 0, 0));
  EXPECT_NE(error.find("at least one stack node"), std::string::npos) << error;
}

TEST(Sysfs, MissingHostNodeErrorNamesFirstStack) {
  std::map<int, NodeInfo> nodes;
  nodes[0] = NodeInfo{0, {}, 1ULL << 30, 0};
  nodes[1] = NodeInfo{1, {4, 5}, 1ULL << 30, 0};
  std::string error;
  EXPECT_FALSE(topologyFromNodes(nodes, error));
  EXPECT_NE(error.find("placement.first_stack to 0"), std::string::npos) << error;
}

// tiered-far-mini: 2 host CPUs, 2 stacks x 2 PIM CPUs, far memory on CPU-less node 3.
std::map<int, NodeInfo> farMemoryNodes() {
  std::map<int, NodeInfo> nodes;
  nodes[0] = NodeInfo{0, {0, 1}, 1ULL << 30, 0};
  nodes[1] = NodeInfo{1, {2, 3}, 1ULL << 30, 0};
  nodes[2] = NodeInfo{2, {4, 5}, 1ULL << 30, 0};
  nodes[3] = NodeInfo{3, {}, 8ULL << 30, 0};
  return nodes;
}

TEST(Sysfs, FarMemoryNodeIsTheSlowTierNotAStack) {
  std::string error;
  const auto t = topologyFromNodes(farMemoryNodes(), error, 3);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->stacks, 2);
  EXPECT_EQ(t->pimCores(), 4);
  // Without saying so the far node is read as a third, memory-only stack.
  const auto unsaid = topologyFromNodes(farMemoryNodes(), error, 0);
  ASSERT_TRUE(unsaid) << error;
  EXPECT_EQ(unsaid->stacks, 3);
}

TEST(Sysfs, SlowNodeThatIsAStackIsAnErrorThatSaysWhatToDo) {
  std::string error;
  EXPECT_FALSE(topologyFromNodes(farMemoryNodes(), error, 2));  // has CPUs, not the last
  EXPECT_NE(error.find("set placement.slow_node"), std::string::npos) << error;
  EXPECT_FALSE(topologyFromNodes(farMemoryNodes(), error, 7));  // no such node
  EXPECT_NE(error.find("nodes are 0..3"), std::string::npos) << error;
}

TEST(ProcMaps, NumaMapsCountsPagesPerNodeWithPageSize) {
  const auto entries = parseNumaMaps(slurp(kFixtures + "/proc/4242/numa_maps"));
  ASSERT_EQ(entries.size(), 5U);
  EXPECT_EQ(entries[0].start, 0x10000U);
  EXPECT_TRUE(entries[0].anon);
  EXPECT_EQ(entries[0].pagesPerNode.at(1), 4U);
  EXPECT_EQ(entries[1].file, "/usr/lib/libfoo.so");
  EXPECT_EQ(entries[3].policy, "prefer:1");
  EXPECT_EQ(entries[4].pageBytes, 2048U * 1024);
  const auto bytes = bytesPerNode(entries);
  EXPECT_EQ(bytes.at(1), (4 + 2 + 4) * 4096ULL + 2 * 2048ULL * 1024);
  EXPECT_EQ(bytes.at(2), (2 + 2) * 4096ULL + 2 * 2048ULL * 1024);
}

TEST(ProcMaps, MapsSelectPrivateAnonymousMappings) {
  const auto vmas = parseMaps(slurp(kFixtures + "/proc/4242/maps"));
  ASSERT_EQ(vmas.size(), 4U);
  EXPECT_TRUE(vmas[0].privateAnon());   // [heap]
  EXPECT_FALSE(vmas[1].privateAnon());  // file
  EXPECT_FALSE(vmas[2].privateAnon());  // shared
  EXPECT_TRUE(vmas[3].privateAnon());   // anonymous
  EXPECT_EQ(vmas[3].end, 0x20000U);
}

TEST(ProcMaps, PagemapEntriesDecode) {
  const auto e = readPagemap(kFixtures + "/proc/4242/pagemap", 0x10000, 0x18000);
  ASSERT_EQ(e.size(), 8U);
  EXPECT_TRUE(e[0].present);
  EXPECT_EQ(e[0].pfn, 0x100U);
  EXPECT_TRUE(e[0].exclusive);
  EXPECT_EQ(e[5].pfn, 0x105U);
  EXPECT_FALSE(e[6].present);
  EXPECT_TRUE(e[6].swapped);
  EXPECT_EQ(e[6].pfn, 0U);
  EXPECT_FALSE(e[7].present);
  const auto shared = readPagemap(kFixtures + "/proc/4242/pagemap", 0x1d000, 0x1e000);
  ASSERT_EQ(shared.size(), 1U);
  EXPECT_TRUE(shared[0].fileOrSharedAnon);
}

TEST(ProcMaps, IdleBitmapReadsAndMarksWords) {
  TempDir tmp;
  fs::copy_file(kFixtures + "/sys/kernel/mm/page_idle/bitmap", tmp.path / "bitmap");
  IdleBitmap bitmap((tmp.path / "bitmap").string());
  ASSERT_TRUE(bitmap.available());
  const auto idle = bitmap.idle({0x100, 0x101, 0x143});
  ASSERT_TRUE(idle);
  EXPECT_EQ(*idle, (std::vector<bool>{true, false, false}));
  ASSERT_TRUE(bitmap.markIdle({0x101, 0x143}));
  const auto after = bitmap.idle({0x101, 0x143});
  EXPECT_EQ(*after, (std::vector<bool>{true, true}));
}

// A kernel that behaves like Linux's move_pages: pages move until the target node is
// full; then the whole call fails with ENOMEM and leaves status entries unwritten.
struct FakeKernel {
  std::map<std::uintptr_t, int> where;
  std::map<int, int> room;
  // Transparent huge pages: addresses of one group move together, as one folio does.
  std::map<std::uintptr_t, int> huge;  // address -> group
  int calls = 0;
  MovePagesCall call() {
    return [this](int, unsigned long n, void** pages, const int* nodes, int* status, int) -> long {
      ++calls;
      std::set<int> movedGroups;
      std::set<unsigned long> busy;
      for (unsigned long i = 0; i < n; ++i) {
        const auto addr = reinterpret_cast<std::uintptr_t>(pages[i]);
        auto it = where.find(addr);
        if (nodes == nullptr) {
          status[i] = it == where.end() ? -ENOENT : it->second;
          continue;
        }
        if (it == where.end()) {
          status[i] = -ENOENT;
          continue;
        }
        if (auto h = huge.find(addr); h != huge.end() && movedGroups.count(h->second) != 0) {
          busy.insert(i);  // its folio is already on its way in this call
          continue;
        }
        if (it->second == nodes[i]) {
          status[i] = nodes[i];
          continue;
        }
        if (room[nodes[i]] == 0) {
          errno = ENOMEM;
          return -1;  // earlier pages moved, their status never written
        }
        if (auto h = huge.find(addr); h != huge.end()) {
          movedGroups.insert(h->second);
          for (auto& [other, group] : huge) {
            if (group == h->second) where[other] = nodes[i];
          }
        }
        --room[nodes[i]];
        it->second = nodes[i];
        // Linux writes status only at the end of a successful call: leave it.
      }
      for (unsigned long i = 0; i < n; ++i) {
        auto it = where.find(reinterpret_cast<std::uintptr_t>(pages[i]));
        if (busy.count(i) != 0) status[i] = -EBUSY;
        else if (it != where.end()) status[i] = it->second;
      }
      return 0;
    };
  }
};

TEST(NumaCalls, ChunkedMoveCountsPagesThatMovedBeforeENOMEMAndStops) {
  FakeKernel k;
  std::vector<std::uintptr_t> pages;
  for (std::uintptr_t i = 0; i < 100; ++i) {
    pages.push_back(0x1000 * (i + 1));
    k.where[pages.back()] = 1;
  }
  k.room[2] = 37;
  const MoveResult r = movePagesChunked(k.call(), 1, pages, 2, {16});
  EXPECT_EQ(r.moved, 37U);
  EXPECT_EQ(r.failed, 63U);
  EXPECT_TRUE(r.targetFull);
  EXPECT_TRUE(r.status.ok);
  // Each chunk: where the pages are, the move, where they are now. No further chunks
  // tried after the full stack.
  EXPECT_EQ(k.calls, 3 * 3);
  int onTwo = 0;
  for (const auto& [a, n] : k.where) onTwo += n == 2;
  EXPECT_EQ(onTwo, 37);
}

TEST(NumaCalls, AHugePageMovedByOneAddressCountsAllItsBasePages) {
  FakeKernel k;
  std::vector<std::uintptr_t> pages;
  for (std::uintptr_t i = 0; i < 24; ++i) {
    pages.push_back(0x1000 * (i + 1));
    k.where[pages.back()] = 1;
    if (i < 16) k.huge[pages.back()] = 0;  // the first 16 base pages are one huge page
  }
  k.room[2] = 1000;
  // The kernel moves the whole huge page for its first address and answers EBUSY for
  // the others in the call; every base page left node 1 all the same.
  const MoveResult r = movePagesChunked(k.call(), 1, pages, 2, {16});
  int onTwo = 0;
  for (const auto& [a, n] : k.where) onTwo += n == 2;
  EXPECT_EQ(onTwo, 24);
  EXPECT_EQ(r.moved, 24U) << "counted from where the pages are, not from the status";
  EXPECT_EQ(r.busy, 0U);
  EXPECT_EQ(r.failed, 0U);
}

TEST(NumaCalls, PagesAlreadyOnTheTargetAreNotCountedAsMoved) {
  FakeKernel k;
  std::vector<std::uintptr_t> pages;
  for (std::uintptr_t i = 0; i < 40; ++i) {
    pages.push_back(0x1000 * (i + 1));
    k.where[pages.back()] = i < 15 ? 2 : 1;  // 15 are there already
  }
  k.room[2] = 1000;
  const MoveResult r = movePagesChunked(k.call(), 1, pages, 2, {16});
  EXPECT_EQ(r.moved, 25U);
  EXPECT_EQ(r.alreadyThere, 15U);
  EXPECT_EQ(r.movedPages.size(), 25U);
  EXPECT_EQ(r.movedPages.front(), pages[15]);
}

TEST(NumaCalls, NodeMaskPassesBitsPlusOne) {
  const NodeMask m = NodeMask::of({1, 2});
  ASSERT_EQ(m.words.size(), 1U);
  EXPECT_EQ(m.words[0], 0b110UL);
  EXPECT_EQ(m.maxnode(), 8 * sizeof(unsigned long) + 1);
  EXPECT_EQ(NodeMask::of({70}).words.size(), 2U);
}

// The real kernel: this machine has at least node 0.
TEST(NumaCallsOnThisKernel, MovePagesOfOwnProcessToNodeZero) {
  const std::size_t n = 64;
  void* mem = mmap(nullptr, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  std::memset(mem, 1, n * 4096);
  std::vector<std::uintptr_t> pages;
  for (std::size_t i = 0; i < n; ++i) pages.push_back(reinterpret_cast<std::uintptr_t>(mem) + i * 4096);
  const MoveResult r = movePagesChunked(realMovePages(), getpid(), pages, 0, {16});
  if (!r.status.ok && r.status.error.find("Function not implemented") != std::string::npos) {
    munmap(mem, n * 4096);
    GTEST_SKIP() << "kernel without NUMA";
  }
  EXPECT_TRUE(r.status.ok) << r.status.error;
  // Pages the kernel placed on node 0 already are found there, not counted as moved.
  const auto before = queryPageNodes(realMovePages(), getpid(), pages);
  EXPECT_EQ(r.moved + r.alreadyThere, n);
  EXPECT_EQ(r.alreadyThere, static_cast<std::uint64_t>(std::count(before.begin(), before.end(), 0)))
      << "this machine's one node: every page was there";
  const auto where = queryPageNodes(realMovePages(), getpid(), pages);
  for (int node : where) EXPECT_EQ(node, 0);
  munmap(mem, n * 4096);
}

TEST(ProcMaps, KpageflagsInactiveMeansOnTheLruNeitherActiveNorUnevictable) {
  const std::uint64_t lru = 1ULL << kKpfLru;
  EXPECT_TRUE(lruInactive(lru));
  EXPECT_FALSE(lruInactive(lru | 1ULL << kKpfActive));
  EXPECT_FALSE(lruInactive(lru | 1ULL << kKpfUnevictable));
  EXPECT_FALSE(lruInactive(0));  // not on an LRU list (a free or kernel page)
  TempDir dir;
  std::vector<std::uint64_t> words = {0, lru, lru | 1ULL << kKpfActive, lru};
  const fs::path file = dir.path / "kpageflags";
  FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(words.data(), 8, words.size(), f);
  std::fclose(f);
  const auto inactive = readLruInactive(file.string(), {3, 2, 1, 0});
  ASSERT_TRUE(inactive);
  EXPECT_EQ(*inactive, (std::vector<bool>{true, false, true, false}));  // PFN 0: unknown
  EXPECT_FALSE(readLruInactive((dir.path / "missing").string(), {1}));
}

// The page cache of this process's own open file, through PageCacheView's mapping: the
// cached pages are found (mincore), mapped, and the kernel places each on a node.
TEST(PageCacheViewOnThisKernel, MapsTheCachedPagesOfAnOpenFileAndTheKernelPlacesThem) {
  TempDir dir;
  const fs::path file = dir.path / "data";
  const std::size_t pages = 32;
  {
    std::string bytes(pages * 4096, 'x');
    FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  FILE* open = std::fopen(file.c_str(), "rb");  // open while scanned, and read: cached
  ASSERT_NE(open, nullptr);
  std::string back(pages * 4096, '\0');
  ASSERT_EQ(std::fread(back.data(), 1, back.size(), open), back.size());
  PageCacheView view("/proc", 4096);
  const PageCacheView::Scan scan = view.scan(getpid(), 20);
  EXPECT_GE(scan.files, 1U);
  EXPECT_GE(scan.cached, pages);
  ASSERT_EQ(scan.pages.size(), 20U);  // at most maxPages, from where the last scan stopped
  std::vector<std::uintptr_t> addrs;
  for (const auto& p : scan.pages) addrs.push_back(p.addr);
  const auto where = queryPageNodes(realMovePages(), getpid(), addrs);
  for (int node : where) EXPECT_GE(node, 0) << "a page the scan returned is not mapped here";
  const PageCacheView::Scan next = view.scan(getpid(), 20);  // goes on, drops the first
  EXPECT_EQ(next.pages.size(), 20U);
  view.release(getpid());
  std::fclose(open);
}

TEST(NumaCallsOnThisKernel, MemPolicyMaskIsReadBackByTheKernel) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MemPolicySpec spec;
    spec.mode = MemPolicySpec::Mode::Preferred;
    spec.nodes = {0};
    if (!applyMemPolicy(spec).ok) _exit(2);
    int mode = -1;
    unsigned long mask[2] = {0, 0};
    if (syscall(SYS_get_mempolicy, &mode, mask, 8 * sizeof mask + 1, nullptr, 0UL) != 0) _exit(3);
    _exit(mode == 1 && mask[0] == 1UL ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(LinuxMachineOnThisKernel, PinThreadAndGoneThread) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  LinuxMachine m({});
  const int tid = static_cast<int>(syscall(SYS_gettid));
  EXPECT_TRUE(m.pinThread(tid, {cpus.front()}).ok);
  cpu_set_t now;
  sched_getaffinity(0, sizeof now, &now);
  EXPECT_EQ(CPU_COUNT(&now), 1);
  EXPECT_TRUE(m.pinThread(tid, cpus).ok);
  const Status gone = m.pinThread(999999999, cpus);
  EXPECT_FALSE(gone.ok);
  EXPECT_TRUE(gone.gone);
}

TEST(LinuxMachineOnThisKernel, AChildThatExitsIsNotAliveEvenAsAZombie) {
  LinuxMachine m({"/sys", "/proc", "/nonexistent", false});
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    close(ready[1]);
    [[maybe_unused]] const ssize_t n = read(ready[0], &c, 1);  // until the parent says
    _exit(0);
  }
  close(ready[0]);
  const AppHandle app{"svc", static_cast<int>(child)};
  EXPECT_TRUE(m.alive(app));
  close(ready[1]);  // the child exits; not reaped yet, so it is a zombie
  for (int i = 0; i < 200 && m.alive(app); ++i) usleep(5000);
  EXPECT_FALSE(m.alive(app)) << "a zombie has exited";
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_FALSE(m.alive(app)) << "a reaped process has exited";
  EXPECT_TRUE(m.alive({"unknown", 0})) << "an app whose pid is not known yet";
}

TEST(Cgroup, PopulatedFromCgroupEventsAndAnEmptyAppCgroupIsRemoved) {
  TempDir tmp;
  fs::copy(kFixtures + "/cgroup", tmp.path / "cg", fs::copy_options::recursive);
  const std::string root = (tmp.path / "cg" / "pimcloud").string();
  CgroupTree tree(root);
  ASSERT_TRUE(tree.prepare().ok);
  EXPECT_FALSE(tree.populated("kvstore").has_value()) << "no cgroup yet";
  ASSERT_TRUE(tree.setAppCpus("kvstore", {4}).ok);
  std::string error;
  ASSERT_TRUE(atomicWriteText(root + "/lc-kvstore/cgroup.events", "populated 1\nfrozen 0\n", error));
  EXPECT_EQ(tree.populated("kvstore"), std::optional<bool>(true));
  ASSERT_TRUE(atomicWriteText(root + "/lc-kvstore/cgroup.events", "populated 0\nfrozen 0\n", error));
  EXPECT_EQ(tree.populated("kvstore"), std::optional<bool>(false));
  // A real cgroup directory holds only kernel files and rmdir removes it; the fixture's
  // holds plain files, which rmdir refuses, and the error names the directory.
  const Status s = tree.removeApp("kvstore");
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("lc-kvstore"), std::string::npos);
  fs::remove_all(root + "/lc-kvstore");
  fs::create_directory(root + "/lc-kvstore");
  EXPECT_TRUE(tree.removeApp("kvstore").ok);
  EXPECT_FALSE(fs::exists(root + "/lc-kvstore"));
  EXPECT_TRUE(tree.removeApp("kvstore").ok) << "already gone is fine";
}

TEST(LinuxMachine, AReleasedAppsCgroupThatIsStillBusyIsRemovedLater) {
  TempDir tmp;
  fs::copy(kFixtures + "/cgroup", tmp.path / "cg", fs::copy_options::recursive);
  LinuxMachineOptions o;
  o.cgroupRoot = (tmp.path / "cg" / "pimcloud").string();
  o.procRoot = (tmp.path / "noproc").string();
  LinuxMachine m(o);
  ASSERT_TRUE(m.prepare().ok);
  ASSERT_TRUE(m.setAppCpus({"svc", 0}, {4, 5}).ok);
  // The fixture's plain files stand for a process still in the cgroup: rmdir refuses.
  m.releaseApp({"svc", 0});
  EXPECT_TRUE(fs::exists(o.cgroupRoot + "/lc-svc"));
  m.housekeeping();
  EXPECT_TRUE(fs::exists(o.cgroupRoot + "/lc-svc"));
  // Its last process gone (the kernel empties the directory's view): removed next time.
  for (const auto& f : fs::directory_iterator(o.cgroupRoot + "/lc-svc")) fs::remove(f.path());
  m.housekeeping();
  EXPECT_FALSE(fs::exists(o.cgroupRoot + "/lc-svc"));
}

TEST(Cgroup, WritesCpusetsQuotaAndFreezeIntoTheTree) {
  TempDir tmp;
  fs::copy(kFixtures + "/cgroup", tmp.path / "cg", fs::copy_options::recursive);
  const std::string root = (tmp.path / "cg" / "pimcloud").string();
  CgroupTree tree(root);
  ASSERT_TRUE(tree.prepare().ok);
  EXPECT_EQ(slurp(tmp.path / "cg" / "cgroup.subtree_control"), "+cpuset +cpu");
  ASSERT_TRUE(tree.setAppCpus("xapian", {4, 5, 6, 12}).ok);
  EXPECT_EQ(slurp(root + "/lc-xapian/cpuset.cpus"), "4-6,12");
  ASSERT_TRUE(tree.addProcess("xapian", 4242).ok);
  EXPECT_EQ(slurp(root + "/lc-xapian/cgroup.procs"), "4242");
  ASSERT_TRUE(tree.setBeCpus({13, 14}).ok);
  EXPECT_EQ(slurp(root + "/be/cpuset.cpus"), "13-14");
  EXPECT_EQ(slurp(root + "/be/cgroup.freeze"), "0");
  ASSERT_TRUE(tree.setBeQuota(0.5, 2).ok);
  EXPECT_EQ(slurp(root + "/be/cpu.max"), "100000 100000");
  ASSERT_TRUE(tree.setBeCpus({}).ok);  // empty pool: freeze, never an empty cpuset
  EXPECT_EQ(slurp(root + "/be/cgroup.freeze"), "1");
  EXPECT_EQ(slurp(root + "/be/cpuset.cpus"), "13-14");
  EXPECT_FALSE(tree.setAppCpus("xapian", {}).ok);
}

TEST(LinuxMachine, HotPagesFromFixtureProcWithIdleTracking) {
  TempDir tmp;
  fs::copy(kFixtures + "/sys", tmp.path / "sys", fs::copy_options::recursive);
  FakeKernel k;
  for (std::uintptr_t a = 0x10000; a < 0x20000; a += 0x1000) k.where[a] = a < 0x13000 ? 2 : 1;
  LinuxMachineOptions o;
  o.procRoot = kFixtures + "/proc";
  o.sysfsRoot = (tmp.path / "sys").string();
  o.useCgroups = false;
  LinuxMachine m(o, k.call());
  const auto pages = m.privatePages(4242);
  // Heap: 6 present; anonymous: 3 private (one is shared).
  ASSERT_EQ(pages.size(), 9U);
  m.trackHotness(4242);  // pages not idle in the fixture bitmap count as accessed
  const auto hot = m.hotPages(4242, 1);
  ASSERT_EQ(hot.size(), 6U);  // 0x13000.. on node 1
  EXPECT_EQ(hot.front().hotness, 1U);
  for (const PageInfo& p : hot) EXPECT_EQ(p.node, 1);
  std::map<std::uintptr_t, std::uint32_t> h;
  for (const PageInfo& p : hot) h[p.addr] = p.hotness;
  EXPECT_EQ(h.at(0x13000), 1U);  // PFN 0x103: accessed
  EXPECT_EQ(h.at(0x14000), 0U);  // PFN 0x104: idle
  EXPECT_EQ(h.at(0x1f000), 1U);  // PFN 0x143: accessed
  EXPECT_EQ(m.freeBytesPerNode().at(1), 6291456ULL * 1024);
  EXPECT_EQ(m.threadsOf(4242), (std::vector<int>{4242, 4243}));
}

TEST(LinuxMachine, AShadowSourceOnlyWhenAskedForAndAvailable) {
  TempDir tmp;
  fs::copy(kFixtures + "/sys", tmp.path / "sys", fs::copy_options::recursive);
  LinuxMachineOptions o;
  o.procRoot = kFixtures + "/proc";
  o.sysfsRoot = (tmp.path / "sys").string();
  o.useCgroups = false;
  o.countersDevice = (tmp.path / "no-counters").string();
  EXPECT_EQ(LinuxMachine(o).shadowHotnessSource(), "") << "not asked for";
  o.shadowHotness = true;
  // Idle tracking in use: its shadow would be the counters, and there are none here.
  LinuxMachine idle(o);
  EXPECT_EQ(idle.hotnessSource(), "idle");
  EXPECT_EQ(idle.shadowHotnessSource(), "");
  EXPECT_TRUE(idle.shadowHotness(4242, -1).empty());
  // "hw" asked for without the device falls back to idle tracking, and nothing shadows it.
  o.hotness = "hw";
  LinuxMachine fallback(o);
  EXPECT_EQ(fallback.hotnessSource(), "idle");
  EXPECT_EQ(fallback.shadowHotnessSource(), "");
  fallback.trackHotness(4242);  // the idle scan still counts for the source in use
  std::size_t seen = 0;
  for (const PageInfo& p : fallback.hotPages(4242, -1)) seen += p.hotness > 0;
  EXPECT_GT(seen, 0U);
}

TEST(LinuxMachine, IdlePageScanSlicesCoverEveryPageOnceAndWrapAround) {
  LinuxMachineOptions o;
  o.procRoot = kFixtures + "/proc";
  o.useCgroups = false;
  LinuxMachine m(o);
  const auto whole = m.privatePages(4242);
  ASSERT_EQ(whole.size(), 9U);
  // Slices of 3 pagemap entries, each going on where the last stopped, until the end.
  std::vector<std::uintptr_t> seen;
  std::uintptr_t cursor = 0;
  int calls = 0;
  do {
    const auto slice = m.privatePages(4242, cursor, 3, cursor);
    EXPECT_LE(slice.size(), 3U);
    for (const auto& page : slice) seen.push_back(page.addr);
    ++calls;
  } while (cursor != 0 && calls < 100);
  EXPECT_GT(calls, 3) << "a slice reads at most its share of the mappings";
  std::vector<std::uintptr_t> all;
  for (const auto& page : whole) all.push_back(page.addr);
  EXPECT_EQ(seen, all) << "every present private page once, in order";
}

}  // namespace
}  // namespace pimcloud
