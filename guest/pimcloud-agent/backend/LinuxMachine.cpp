#include "backend/LinuxMachine.h"

#include <dirent.h>
#include <sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>

#include "backend/Sysfs.h"

namespace pimcloud {

LinuxMachine::LinuxMachine(LinuxMachineOptions options, MovePagesCall movePages)
    : options_(std::move(options)),
      movePages_(std::move(movePages)),
      cgroups_(options_.cgroupRoot),
      idle_(options_.sysfsRoot + "/kernel/mm/page_idle/bitmap"),
      pageCache_(options_.procRoot, options_.pageBytes) {
  // The counters serve the miss counters and the throttle whatever the hotness source.
  std::string error;
  counters_ = HwCounters::open(error, options_.countersDevice);
  if (counters_) countersInfo_ = counters_->info(error);
  if (options_.hotness == "hw" && !(counters_ && countersInfo_)) {
    hotnessNote_ = "hardware counters unavailable (" + error + "): idle page tracking";
  }
}

Status LinuxMachine::prepare() {
  return options_.useCgroups ? cgroups_.prepare() : Status::success();
}

std::map<int, std::uint64_t> LinuxMachine::freeBytesPerNode() {
  std::string error;
  std::map<int, std::uint64_t> out;
  for (const auto& [node, info] : readNodes(options_.sysfsRoot, error)) out[node] = info.freeBytes;
  return out;
}

std::vector<int> LinuxMachine::threadsOf(int pid) const {
  std::vector<int> tids;
  const std::string dir = options_.procRoot + "/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') tids.push_back(std::atoi(e->d_name));
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  return tids;
}

Status LinuxMachine::pinThread(int tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(static_cast<unsigned>(cpu), &set);
  if (sched_setaffinity(tid, sizeof set, &set) != 0) {
    return Status::failure("sched_setaffinity(" + std::to_string(tid) + "): " +
                               std::strerror(errno),
                           errno == ESRCH);
  }
  return Status::success();
}

Status LinuxMachine::setAppCpus(const AppHandle& app, const std::vector<int>& cpus) {
  if (options_.useCgroups) {
    const std::string key = app.name + "/" + std::to_string(app.pid);
    if (app.pid > 0 && placed_.count(key) == 0) {
      if (Status s = cgroups_.addProcess(app.name, app.pid); !s.ok) return s;
      placed_.insert(key);
    }
    return cgroups_.setAppCpus(app.name, cpus);
  }
  if (app.pid <= 0) return Status::success();  // nothing to pin yet
  const std::vector<int> tids = threadsOf(app.pid);
  if (tids.empty()) return Status::failure("process " + std::to_string(app.pid) + " is gone", true);
  for (int tid : tids) {
    const Status s = pinThread(tid, cpus);
    if (!s.ok && !s.gone) return s;  // a thread that just exited is fine
  }
  return Status::success();
}

Status LinuxMachine::setBeCpus(const std::vector<int>& cpus) {
  beCpus_ = cpus.size();
  if (!options_.useCgroups) return Status::success();
  return cgroups_.setBeCpus(cpus);
}

Status LinuxMachine::setBeQuota(double fraction) {
  if (!options_.useCgroups) return Status::failure("cpu.max needs cgroups (cgroup.mode = cpuset)");
  return cgroups_.setBeQuota(fraction, beCpus_);
}

std::vector<LinuxMachine::Page> LinuxMachine::privatePages(int pid) const {
  std::uintptr_t next = 0;
  return privatePages(pid, 0, SIZE_MAX, next);
}

std::vector<LinuxMachine::Page> LinuxMachine::privatePages(int pid, std::uintptr_t from,
                                                           std::size_t maxPages,
                                                           std::uintptr_t& next) const {
  next = 0;
  std::vector<Page> out;
  std::string maps;
  const std::string base = options_.procRoot + "/" + std::to_string(pid);
  if (!readFile(base + "/maps", maps)) return out;
  std::size_t read = 0;  // pagemap entries read: the cost, present or not
  for (const Vma& v : parseMaps(maps)) {
    if (!v.privateAnon() || v.end <= from) continue;
    const std::uintptr_t start = std::max(v.start, from);
    const std::size_t span = (v.end - start) / options_.pageBytes;
    const std::size_t take = std::min(span, maxPages - read);
    const std::uintptr_t end = start + take * options_.pageBytes;
    const auto entries = readPagemap(base + "/pagemap", start, end, options_.pageBytes);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].present && !entries[i].fileOrSharedAnon) {
        out.push_back({start + i * options_.pageBytes, entries[i].pfn});
      }
    }
    read += take;
    if (read >= maxPages) {
      next = end < v.end ? end : v.end;  // go on from here next time
      break;
    }
  }
  return out;
}

bool LinuxMachine::alive(const AppHandle& app) {
  if (app.pid <= 0) return true;
  if (options_.useCgroups && placed_.count(app.name + "/" + std::to_string(app.pid)) != 0) {
    // Populated 0: the app and every process it started have exited.
    if (cgroups_.populated(app.name) == false) return false;
  }
  // An exited process stays a zombie until its parent reaps it: that is not running.
  std::string stat;
  if (!readFile(options_.procRoot + "/" + std::to_string(app.pid) + "/stat", stat)) return false;
  const auto paren = stat.rfind(')');
  const char state = paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
  return state != 'Z' && state != 'X';
}

std::map<int, std::uint64_t> LinuxMachine::pagesPerNode(int pid) {
  std::map<int, std::uint64_t> out;
  std::string text;
  if (!readFile(options_.procRoot + "/" + std::to_string(pid) + "/numa_maps", text)) return out;
  for (const NumaMapsEntry& e : parseNumaMaps(text)) {
    for (const auto& [node, pages] : e.pagesPerNode) out[node] += pages * (e.pageBytes / 4096);
  }
  return out;
}

void LinuxMachine::releaseApp(const AppHandle& app) {
  placed_.erase(app.name + "/" + std::to_string(app.pid));
  idleSeen_.erase(app.pid);
  hwCounts_.erase(app.pid);
  scanCursor_.erase(app.pid);
  pageCache_.release(app.pid);
  if (options_.useCgroups && !cgroups_.removeApp(app.name).ok) lingering_.insert(app.name);
}

std::vector<int> LinuxMachine::bePids() {
  std::vector<int> out;
  if (!options_.useCgroups) return out;
  std::ifstream procs(options_.cgroupRoot + "/be/cgroup.procs");
  for (int pid = 0; procs >> pid;) out.push_back(pid);
  return out;
}

void LinuxMachine::housekeeping() {
  hottestThisInterval_.clear();
  for (auto it = lingering_.begin(); it != lingering_.end();) {
    it = cgroups_.removeApp(*it).ok ? lingering_.erase(it) : std::next(it);
  }
}

const HotPages* LinuxMachine::hottestOf(int node) {
  auto cached = hottestThisInterval_.find(node);
  if (cached == hottestThisInterval_.end()) {
    std::string error;
    auto answer = counters_->hottest(static_cast<int>(countersInfo_->maxQuery), node, error);
    if (!answer) return nullptr;
    cached = hottestThisInterval_.emplace(node, std::move(*answer)).first;
  }
  return &cached->second;
}

// The counters count every frame of every memory; this keeps the frames the device
// attributes to `pid` (through the kernel's reverse map), with their decayed counts, of
// the memory of `node` only (node < 0: every memory): each memory asked is a query with a
// reverse-map walk per frame, ~8 ms of a host core in gem5.
void LinuxMachine::trackHardwareHotness(int pid, int node) {
  auto& hot = hwCounts_[pid];
  hot.clear();
  for (const AccessedPage& page : accessedPagesOn(pid, node)) {
    hot[page.addr] = static_cast<std::uint32_t>(std::min<std::uint64_t>(page.count, UINT32_MAX));
  }
}

bool LinuxMachine::resetPageCounters() {
  if (!hasPageCounters()) return false;
  bool ok = true;
  for (const CountedMemory& memory : countersInfo_->memories) {
    ok &= counters_->ask("reset " + std::to_string(memory.node)).rfind("ok ", 0) == 0;
  }
  hottestThisInterval_.clear();
  return ok;
}

std::vector<AccessedPage> LinuxMachine::accessedPages(int pid) { return accessedPagesOn(pid, -1); }

std::vector<AccessedPage> LinuxMachine::accessedPagesOn(int pid, int node) {
  std::vector<AccessedPage> out;
  if (!hasPageCounters()) return out;
  for (const CountedMemory& memory : countersInfo_->memories) {
    if (node >= 0 && memory.node != node) continue;
    const HotPages* hottest = hottestOf(memory.node);
    if (hottest == nullptr) continue;
    for (const HotPage& page : hottest->pages) {
      if (page.pid == pid && page.vaddr != 0) {
        out.push_back({static_cast<std::uintptr_t>(page.vaddr), memory.node, page.count,
                       page.shared, page.written, page.firstCpu});
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const AccessedPage& a, const AccessedPage& b) {
    return a.count > b.count;
  });
  return out;
}

std::map<int, MissSample> LinuxMachine::missCounters() {
  std::map<int, MissSample> out;
  if (!counters_) return out;
  std::string error;
  if (const auto cpus = counters_->cpus(error)) {
    for (const CpuCounters& c : *cpus) out[c.cpu] = {c.misses, c.outstandingCycles, c.cycles};
  }
  return out;
}

Status LinuxMachine::setBandwidthThrottle(const std::vector<int>& cpus, int level) {
  if (!counters_) return Machine::setBandwidthThrottle(cpus, level);
  for (int cpu : cpus) {
    std::string error;
    if (!counters_->setThrottle(cpu, level, error)) return Status::failure(error);
  }
  return Status::success();
}

void LinuxMachine::trackHotness(int pid) {
  // The counters count all the time: they are asked (the paper's hot-page call, with a
  // reverse-map walk per frame in the driver) only when pages are about to move, in
  // hotPages, not every scan: in gem5 a periodic query of 4096 frames per stack took up
  // to 33 ms of a host core an interval, beside the service on it.
  if (hotnessSource() == "hw" && shadowHotnessSource() != "idle") return;
  if (!idle_.available()) return;
  std::uintptr_t& cursor = scanCursor_[pid];
  const std::vector<Page> pages = privatePages(pid, cursor, options_.hotnessScanPages, cursor);
  std::vector<std::uint64_t> pfns;
  for (const Page& p : pages) pfns.push_back(p.pfn);
  auto& hot = idleSeen_[pid];
  // Pages touched since the last scan are no longer idle: count them, then re-arm.
  if (const auto idle = idle_.idle(pfns)) {
    for (std::size_t i = 0; i < pages.size(); ++i) {
      if (!(*idle)[i]) ++hot[pages[i].addr];
    }
  }
  idle_.markIdle(pfns);
}

std::vector<PageInfo> LinuxMachine::pagesOn(int pid, int node) {
  const std::vector<Page> pages = privatePages(pid);
  std::vector<std::uintptr_t> addrs;
  addrs.reserve(pages.size());
  for (const Page& p : pages) addrs.push_back(p.addr);
  const std::vector<int> nodes = queryPageNodes(movePages_, pid, addrs, options_.chunkPages);
  std::vector<PageInfo> out;
  for (std::size_t i = 0; i < addrs.size(); ++i) {
    if (node < 0 || nodes[i] == node) out.push_back({addrs[i], nodes[i], 0});
  }
  return out;
}

// A source's counts of a process's pages: the counters asked now (their answer is kept for
// the interval, per memory), or what the idle scans have seen so far.
const LinuxMachine::Counts& LinuxMachine::countsFrom(const std::string& source, int pid,
                                                      int node) {
  if (source != "hw") return idleSeen_[pid];
  trackHardwareHotness(pid, node);
  return hwCounts_[pid];
}

std::vector<PageInfo> LinuxMachine::hotPages(int pid, int node) {
  const Counts& hot = countsFrom(hotnessSource(), pid, node);
  std::vector<PageInfo> out = pagesOn(pid, node);
  for (PageInfo& page : out) {
    const auto h = hot.find(page.addr);
    if (h != hot.end()) page.hotness = h->second;
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const PageInfo& a, const PageInfo& b) { return a.hotness > b.hotness; });
  return out;
}

std::string LinuxMachine::shadowHotnessSource() const {
  if (!options_.shadowHotness) return "";
  if (hotnessSource() == "hw") return idle_.available() ? "idle" : "";
  return hasPageCounters() ? "hw" : "";
}

std::map<std::uintptr_t, std::uint32_t> LinuxMachine::shadowHotness(int pid, int node) {
  const std::string shadow = shadowHotnessSource();
  return shadow.empty() ? Counts{} : countsFrom(shadow, pid, node);
}

std::vector<PageInfo> LinuxMachine::inactiveAmong(int pid, const std::vector<std::uintptr_t>& addrs,
                                                  const std::vector<std::uint64_t>& pfns,
                                                  const std::set<int>& nodes,
                                                  std::size_t maxPages) const {
  const std::vector<int> where = queryPageNodes(movePages_, pid, addrs, options_.chunkPages);
  const auto inactive = readLruInactive(options_.procRoot + "/kpageflags", pfns);
  std::vector<PageInfo> out;
  if (!inactive) return out;
  for (std::size_t i = 0; i < addrs.size() && out.size() < maxPages; ++i) {
    if (nodes.count(where[i]) != 0 && (*inactive)[i]) out.push_back({addrs[i], where[i], 0});
  }
  return out;
}

std::vector<std::uintptr_t> LinuxMachine::inactivePages(int pid, int node, std::size_t maxPages) {
  std::vector<std::uintptr_t> addrs;
  std::vector<std::uint64_t> pfns;
  for (const Page& p : privatePages(pid)) {
    addrs.push_back(p.addr);
    pfns.push_back(p.pfn);
  }
  std::vector<std::uintptr_t> out;
  for (const PageInfo& p : inactiveAmong(pid, addrs, pfns, {node}, maxPages)) out.push_back(p.addr);
  return out;
}

Machine::FilePages LinuxMachine::inactiveFilePages(int pid, const std::set<int>& nodes,
                                                    std::size_t maxPages) {
  const PageCacheView::Scan scan = pageCache_.scan(pid, options_.hotnessScanPages);
  FilePages out;
  out.owner = static_cast<int>(::getpid());
  out.files = scan.files;
  out.cached = scan.cached;
  std::vector<std::uintptr_t> addrs;
  std::vector<std::uint64_t> pfns;
  for (const auto& p : scan.pages) {
    addrs.push_back(p.addr);
    pfns.push_back(p.pfn);
  }
  out.pages = inactiveAmong(out.owner, addrs, pfns, nodes, maxPages);
  return out;
}

MoveResult LinuxMachine::movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) {
  return movePagesChunked(movePages_, pid, pages, node, {options_.chunkPages});
}

}  // namespace pimcloud
