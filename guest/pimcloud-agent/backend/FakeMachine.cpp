#include "backend/FakeMachine.h"

#include <algorithm>

namespace pimcloud {

FakeMachine::FakeMachine(const Topology& topology) : topology_(&topology) {
  for (int s = 1; s <= topology.stacks; ++s) {
    freeBytes[topology.nodeOf(s)] = topology.stackBytes.at(static_cast<std::size_t>(s));
  }
}

void FakeMachine::addApp(const std::string& name, int pid, const FakeAppModel& model, int threads,
                         std::size_t pages) {
  models_[name] = model;
  pids_[name] = pid;
  std::vector<int> tids;
  for (int t = 0; t < threads; ++t) tids.push_back(pid * 100 + t);
  tids_[name] = tids;
  auto& list = pagesOf[pid];
  for (std::size_t i = 0; i < pages; ++i) {
    // Hotness falls off fast, as in the paper's Fig. 5.
    list.push_back({0x10000000 + i * kPageBytes, model.homeNode,
                    static_cast<std::uint32_t>(1000000 / (i + 1))});
    freeBytes[model.homeNode] -= kPageBytes;
  }
}

void FakeMachine::removeApp(const std::string& name) {
  models_.erase(name);
  appCpus.erase(name);
  deadApps.insert(name);
}

std::vector<std::string> FakeMachine::apps() const {
  std::vector<std::string> v;
  for (const auto& [name, m] : models_) v.push_back(name);
  return v;
}

double FakeMachine::capacity(const std::string& name) const {
  const FakeAppModel& m = models_.at(name);
  auto it = appCpus.find(name);
  if (it == appCpus.end()) return 0;
  const int pid = pids_.at(name);
  double cap = 0;
  for (int cpu : it->second) {
    const int id = topology_->coreByCpu(cpu);
    if (id < 0) continue;
    const Core& c = topology_->core(id);
    // Apps sharing a CPU (Default, AMS-like) share its throughput.
    int sharers = 0;
    for (const auto& [other, cpus] : appCpus) {
      if (models_.count(other) && std::find(cpus.begin(), cpus.end(), cpu) != cpus.end()) ++sharers;
    }
    double rate = c.type == CoreType::Host ? m.maxRpsHost : m.maxRpsPim;
    const int node = topology_->nodeOf(c.stack);  // homeNode and the pages' are nodes
    if (c.type == CoreType::Pim && node != m.homeNode) {
      // Remote PIM core: slower unless pages were migrated to its stack.
      bool migrated = false;
      auto p = pagesOf.find(pid);
      if (p != pagesOf.end()) {
        migrated = std::any_of(p->second.begin(), p->second.end(),
                               [&](const PageInfo& pg) { return pg.node == node; });
      }
      if (!migrated) rate *= m.remoteFactor;
    }
    cap += rate / std::max(sharers, 1);
  }
  return cap;
}

IntervalStats FakeMachine::sample(const std::string& name, std::int64_t tNs) const {
  const FakeAppModel& m = models_.at(name);
  const double cap = capacity(name);
  const double u = cap > 0 ? m.load / cap : 10.0;
  IntervalStats s;
  s.tNs = tNs;
  if (u >= 0.98) {
    s.p99Ns = m.serviceNs * 200;
    s.meanNs = m.serviceNs * 60;
  } else {
    s.p99Ns = m.serviceNs * (1 + 3 * u / (1 - u));
    s.meanNs = m.serviceNs * (1 + u / (1 - u));
  }
  s.rps = std::min(m.load, cap);
  s.count = static_cast<std::uint64_t>(s.rps / 10) + 1;
  s.tids = tids_.at(name);
  return s;
}

Status FakeMachine::setAppCpus(const AppHandle& app, const std::vector<int>& cpus) {
  ++setAppCpusCalls;
  if (deadApps.count(app.name)) return Status::failure("no such process", true);
  appCpus[app.name] = cpus;
  appPids[app.name] = app.pid;
  // As cgroup v2 does: a new cpuset resets the affinity of every thread in it.
  auto t = tids_.find(app.name);
  if (t != tids_.end()) {
    for (int tid : t->second) {
      if (!deadTids.count(tid)) threadCpus[tid] = cpus;
    }
  }
  return Status::success();
}

Status FakeMachine::pinThread(int tid, const std::vector<int>& cpus) {
  if (deadTids.count(tid)) return Status::failure("no such thread", true);
  threadCpus[tid] = cpus;
  return Status::success();
}

Status FakeMachine::setBeCpus(const std::vector<int>& cpus) {
  beCpus = cpus;
  return Status::success();
}

Status FakeMachine::setBeQuota(double fraction) {
  beQuota = fraction;
  return Status::success();
}

std::vector<PageInfo> FakeMachine::pagesAt(int pid, int node) const {
  std::vector<PageInfo> v;
  auto it = pagesOf.find(pid);
  if (it == pagesOf.end()) return v;
  for (const PageInfo& p : it->second) {
    if (node < 0 || p.node == node) v.push_back(p);
  }
  return v;
}

std::vector<PageInfo> FakeMachine::pagesOn(int pid, int node) {
  ++pagesOnCalls;
  std::vector<PageInfo> v = pagesAt(pid, node);
  for (PageInfo& p : v) p.hotness = 0;
  return v;
}

std::vector<PageInfo> FakeMachine::hotPages(int pid, int node) {
  ++hotPagesCalls;
  std::vector<PageInfo> v = pagesAt(pid, node);
  std::stable_sort(v.begin(), v.end(),
                   [](const PageInfo& a, const PageInfo& b) { return a.hotness > b.hotness; });
  return v;
}

std::vector<AccessedPage> FakeMachine::accessedPages(int pid) {
  std::vector<AccessedPage> out;
  if (!pageCounters) return out;
  for (const PageInfo& p : pagesOf[pid]) {
    auto it = accessed.find(p.addr);
    if (it == accessed.end()) continue;
    AccessedPage a = it->second;
    a.addr = p.addr;
    a.node = p.node;  // where the page is now: moves update pagesOf
    out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(), [](const AccessedPage& a, const AccessedPage& b) {
    return a.count > b.count;
  });
  return out;
}

std::vector<std::uintptr_t> FakeMachine::inactivePages(int pid, int node, std::size_t maxPages) {
  std::vector<std::uintptr_t> out;
  for (const PageInfo& p : pagesOf[pid]) {
    if (out.size() >= maxPages) break;
    if (p.node == node && activePages.count(p.addr) == 0) out.push_back(p.addr);
  }
  return out;
}

Machine::FilePages FakeMachine::inactiveFilePages(int pid, const std::set<int>& nodes,
                                                   std::size_t maxPages) {
  ++fileScans;
  FilePages out;
  out.owner = pageCacheOwner(pid);
  out.files = openFiles[pid];
  out.cached = pagesOf[out.owner].size();
  for (const PageInfo& p : pagesOf[out.owner]) {
    if (out.pages.size() >= maxPages) break;
    if (nodes.count(p.node) != 0 && activePages.count(p.addr) == 0) out.pages.push_back(p);
  }
  return out;
}

MoveResult FakeMachine::movePages(int pid, const std::vector<std::uintptr_t>& pages, int node) {
  MoveResult r;
  auto it = pagesOf.find(pid);
  if (it == pagesOf.end()) {
    r.status = Status::failure("no such process", true);
    return r;
  }
  for (std::uintptr_t addr : pages) {
    auto p = std::find_if(it->second.begin(), it->second.end(),
                          [addr](const PageInfo& pg) { return pg.addr == addr; });
    if (p == it->second.end()) {
      ++r.failed;
      continue;
    }
    if (p->node == node) {
      ++r.alreadyThere;
      r.foundThere.push_back(addr);
      continue;
    }
    if (busyPages.count(addr) != 0) {
      ++r.failed;
      ++r.busy;
      continue;
    }
    if (freeBytes[node] < kPageBytes) {
      r.targetFull = true;
      ++r.failed;
      continue;
    }
    freeBytes[node] -= kPageBytes;
    freeBytes[p->node] += kPageBytes;
    p->node = node;
    ++r.moved;
    r.movedPages.push_back(addr);
    clockNs += nsPerPageMoved;
  }
  return r;
}

void FakeLatencySource::start(const std::string& name, double qosNs, double maxRpsHost,
                              double maxRpsPim, int threads) {
  AppEvent e;
  e.kind = AppEvent::Kind::Start;
  e.app = name;
  e.pid = machine_->pids_.count(name) ? machine_->pids_.at(name) : 0;
  e.spec.name = name;
  e.spec.qosNs = qosNs;
  e.spec.maxRpsHost = maxRpsHost;
  e.spec.maxRpsPim = maxRpsPim;
  e.spec.threads = threads;
  events_.push_back(e);
}

void FakeLatencySource::exit(const std::string& name) {
  AppEvent e;
  e.kind = AppEvent::Kind::Exit;
  e.app = name;
  events_.push_back(e);
}

LatencyBatch FakeLatencySource::poll() {
  LatencyBatch b;
  b.events = std::move(events_);
  events_.clear();
  for (const std::string& name : machine_->apps()) {
    if (machine_->appCpus.count(name)) b.add(name, machine_->sample(name, tNs_));
  }
  return b;
}

}  // namespace pimcloud
