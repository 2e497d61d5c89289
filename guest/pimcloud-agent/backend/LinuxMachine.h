// The Machine on a real Linux kernel: cgroup v2 cpusets (or sched_setaffinity for every
// thread), move_pages in chunks, free memory from sysfs, and page hotness from idle page
// tracking (pagemap + page_idle bitmap; without it every page counts as equally hot) or
// from the hardware's page-access counters (guest/driver, `hotness = "hw"`).
#pragma once

#include <map>
#include <set>
#include <string>

#include "backend/Cgroup.h"
#include "backend/HwCounters.h"
#include "backend/Machine.h"
#include "backend/NumaCalls.h"
#include "backend/PageCacheView.h"
#include "backend/ProcMaps.h"

namespace pimcloud {

struct LinuxMachineOptions {
  std::string sysfsRoot = "/sys";
  std::string procRoot = "/proc";
  std::string cgroupRoot = "/sys/fs/cgroup/pimcloud";
  bool useCgroups = true;
  std::size_t pageBytes = 4096;
  std::size_t chunkPages = 512;
  // Idle-page tracking reads this many pages per call and goes on from there the next
  // time: a round over a large app spans several calls, none of which stalls the loop.
  std::size_t hotnessScanPages = 4096;
  // Where page hotness comes from: "idle" (idle page tracking) or "hw" (the page-access
  // counters of the gem5 board, through guest/driver; idle tracking when absent).
  std::string hotness = "idle";
  // Also keep the other source's view (idle scans beside the counters, or the counters'
  // query at each decision beside idle scans), to log both choices of the same pages.
  bool shadowHotness = false;
  std::string countersDevice = kHwCountersDevice;
};

class LinuxMachine : public Machine {
 public:
  explicit LinuxMachine(LinuxMachineOptions options, MovePagesCall movePages = realMovePages());

  Status prepare();  // creates the cgroup tree when cgroups are used
  // "hw" or "idle": the source in use, and why it is not the one asked for ("" if it is).
  std::string hotnessSource() const override {
    return options_.hotness == "hw" && counters_ && countersInfo_ ? "hw" : "idle";
  }
  std::string shadowHotnessSource() const override;
  std::map<std::uintptr_t, std::uint32_t> shadowHotness(int pid, int node) override;
  const std::string& hotnessNote() const { return hotnessNote_; }

  std::map<int, std::uint64_t> freeBytesPerNode() override;
  Status setAppCpus(const AppHandle& app, const std::vector<int>& cpus) override;
  Status pinThread(int tid, const std::vector<int>& cpus) override;
  Status setBeCpus(const std::vector<int>& cpus) override;
  Status setBeQuota(double fractionOfCpus) override;
  std::vector<PageInfo> hotPages(int pid, int node) override;
  std::vector<PageInfo> pagesOn(int pid, int node) override;
  MoveResult movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) override;
  void trackHotness(int pid) override;
  std::map<int, MissSample> missCounters() override;
  std::vector<AccessedPage> accessedPages(int pid) override;
  bool hasPageCounters() const override { return counters_ && countersInfo_; }
  bool resetPageCounters() override;
  Status setBandwidthThrottle(const std::vector<int>& cpus, int level) override;
  bool alive(const AppHandle& app) override;
  std::map<int, std::uint64_t> pagesPerNode(int pid) override;
  void releaseApp(const AppHandle& app) override;
  void housekeeping() override;
  std::vector<int> bePids() override;
  std::vector<std::uintptr_t> inactivePages(int pid, int node, std::size_t maxPages) override;
  FilePages inactiveFilePages(int pid, const std::set<int>& nodes, std::size_t maxPages) override;

  // Present private anonymous pages of a process with their PFNs (pagemap).
  struct Page {
    std::uintptr_t addr;
    std::uint64_t pfn;
  };
  std::vector<Page> privatePages(int pid) const;
  // Up to `maxPages` of them from address `from` on; `next` is where the next call goes
  // on (0 when the scan reached the end).
  std::vector<Page> privatePages(int pid, std::uintptr_t from, std::size_t maxPages,
                                 std::uintptr_t& next) const;
  std::vector<int> threadsOf(int pid) const;

 private:
  LinuxMachineOptions options_;
  MovePagesCall movePages_;
  CgroupTree cgroups_;
  IdleBitmap idle_;
  std::set<std::string> placed_;  // "app/pid" already in its cgroup
  std::set<std::string> lingering_;  // released apps whose cgroup still had a process
  std::size_t beCpus_ = 0;
  using Counts = std::map<std::uintptr_t, std::uint32_t>;  // addr -> hotness
  std::map<int, Counts> idleSeen_;  // pid -> idle scans that saw the page touched
  std::map<int, Counts> hwCounts_;  // pid -> the counters' decayed access count
  std::map<int, std::uintptr_t> scanCursor_;  // pid -> where its idle-page scan goes on
  std::optional<HwCounters> counters_;  // set when the device is there
  std::optional<HwInfo> countersInfo_;  // its memories and limits: fixed, read once
  // This interval's "hottest" answer per counted memory, shared by every app's scan and
  // cleared by housekeeping(): one device query per memory per interval, not per app.
  std::map<int, HotPages> hottestThisInterval_;
  const HotPages* hottestOf(int node);  // this interval's answer for a node, asked once
  std::string hotnessNote_;
  PageCacheView pageCache_;  // HeteroOS-LRU's view of the apps' open files
  void trackHardwareHotness(int pid, int node);
  const Counts& countsFrom(const std::string& source, int pid, int node);
  std::vector<AccessedPage> accessedPagesOn(int pid, int node);  // node < 0: every memory
  // Of these pages of `pid` (addresses with their PFNs), those on one of `nodes` that the
  // kernel's LRU holds inactive, at most maxPages.
  std::vector<PageInfo> inactiveAmong(int pid, const std::vector<std::uintptr_t>& addrs,
                                      const std::vector<std::uint64_t>& pfns,
                                      const std::set<int>& nodes, std::size_t maxPages) const;
};

}  // namespace pimcloud
