#include "engine/Engine.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "placement/Placement.h"

namespace pimcloud {

using nlohmann::json;

namespace {

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

Engine::Engine(const Topology& topology, Policy& policy, Machine& machine, LatencySource& source,
               DecisionLog& log, HarnessControl* control, EngineOptions options)
    : topology_(&topology),
      policy_(&policy),
      machine_(&machine),
      source_(&source),
      log_(&log),
      control_(control),
      options_(options) {}

AppId Engine::idOf(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? kBePool : it->second;
}

void Engine::control(const std::string& line) {
  if (control_ != nullptr) control_->send(line);
}

void Engine::serviceCommand(const Runtime& rt, const std::string& command, Decision& d) {
  if (rt.controlSocket.empty()) return;
  const std::string error = sendServiceCommand(rt.controlSocket, command);
  if (!error.empty()) d.reason += "; " + error;
}

void Engine::addApp(const AppSpec& spec, int pid, const std::string& controlSocket,
                    bool arrives) {
  const AppId id = nextId_++;
  Runtime rt;
  rt.arrives = arrives;
  rt.handle = {spec.name, pid};
  rt.controlSocket = controlSocket;
  rt.spec = spec;
  apps_[id] = rt;
  ids_[spec.name] = id;
}

// Keyed by stack (1..M), as the policies see it; the machine reports nodes.
std::map<int, std::uint64_t> Engine::freeBytesPerStack() {
  std::map<int, std::uint64_t> out;
  for (const auto& [node, bytes] : machine_->freeBytesPerNode()) {
    const int stack = topology_->stackOf(node);
    if (stack >= 1) out[stack] = bytes;
  }
  return out;
}

// A configured app placed before its pid was known had only its cgroup's CPUs set: its
// cores are applied again, now to the process (cgroup.procs, or every thread's affinity).
void Engine::learnPid(AppId id, Runtime& rt, int pid) {
  if (pid <= 0 || pid == rt.handle.pid) return;
  rt.handle.pid = pid;
  applied_.appCpus.erase(id);
}

void Engine::handleEvents(std::int64_t tNs, const LatencyBatch& batch) {
  for (const std::string& e : batch.errors) log_->note(tNs, "input-error", e);
  for (const AppEvent& e : batch.events) {
    if (e.kind == AppEvent::Kind::Start) {
      if (ids_.count(e.app) != 0) {
        // Known from the config: take the pid and whatever the harness knows better.
        Runtime& rt = apps_.at(ids_.at(e.app));
        learnPid(ids_.at(e.app), rt, e.pid);
        if (rt.spec.maxRpsHost <= 0) rt.spec.maxRpsHost = e.spec.maxRpsHost;
        if (rt.spec.maxRpsPim <= 0) rt.spec.maxRpsPim = e.spec.maxRpsPim;
        if (e.spec.qosNs > 0) rt.spec.qosNs = e.spec.qosNs;
        continue;
      }
      exited_.erase(e.app);
      addApp(e.spec, e.pid);
    } else {
      const AppId id = idOf(e.app);
      if (id == kBePool) continue;
      appGone(tNs, id, "the harness reported its exit");
    }
  }
}

void Engine::appGone(std::int64_t tNs, AppId id, const std::string& why) {
  auto it = apps_.find(id);
  if (it == apps_.end()) return;
  if (it->second.inPolicy) {
    std::vector<Decision> out;
    policy_->exit(id, tNs, out);
    for (Decision& d : out) {
      d.reason += d.reason.empty() ? why : "; " + why;
      pending_.push_back(d);
    }
  } else {
    Decision d;
    d.tNs = tNs;
    d.event = "exit";
    d.app = id;
    d.appName = it->second.spec.name;
    d.reason = why + " (before the policy managed it)";
    pending_.push_back(d);
  }
  machine_->releaseApp(it->second.handle);
  exited_.insert(it->second.spec.name);
  moves_.erase(std::remove_if(moves_.begin(), moves_.end(),
                              [id](const MoveJob& j) { return j.app == id; }),
               moves_.end());
  ids_.erase(it->second.spec.name);
  apps_.erase(it);
  applied_.appCpus.erase(id);
}

void Engine::profile(std::int64_t tNs, AppId id, Runtime& rt,
                     const std::vector<IntervalStats>& lines) {
  for (const IntervalStats& s : lines) countProfileLine(rt.profiles, s, options_.intervalNs);
  if (rt.profilePhase != 0 && tNs < rt.profiles.back().untilNs) return;
  auto firstCpu = [this](CoreType type) {
    for (int cpu : applied_.beCpus) {
      const int core = topology_->coreByCpu(cpu);
      if (core >= 0 && topology_->core(core).type == type) return cpu;
    }
    for (const Core& c : topology_->cores) {
      if (c.type == type) return c.cpu;
    }
    return -1;
  };
  auto begin = [&](CoreType type) {
    const int cpu = firstCpu(type);
    const Status st = machine_->setAppCpus(rt.handle, {cpu});
    if (!st.ok && st.gone) return false;
    json j{{"t_ns", tNs}, {"event", "profile"},   {"app", rt.spec.name},
           {"core_type", toString(type)}, {"cpu", cpu}, {"duration_ms", options_.profileNs / 1'000'000}};
    control(j.dump());
    ProfileWindow w;
    w.type = type;
    w.cpu = cpu;
    w.tNs = tNs;
    w.untilNs = tNs + options_.profileNs;
    rt.profiles.push_back(w);
    return true;
  };
  if (rt.profilePhase == 0) {
    rt.profilePhase = 1;
    rt.profiles.clear();
    if (!begin(CoreType::Host)) appGone(tNs, id, "exited while being profiled");
    return;
  }
  if (rt.profilePhase == 1) {
    rt.profilePhase = 2;
    if (!begin(CoreType::Pim)) appGone(tNs, id, "exited while being profiled");
    return;
  }
  const ProfileWindow& host = rt.profiles.front();
  const ProfileWindow& pim = rt.profiles.back();
  rt.spec.maxRpsHost = host.maxRps;
  rt.spec.maxRpsPim = pim.maxRps;
  rt.profilePhase = 0;
  json j{{"t_ns", tNs}, {"event", "profile-done"}, {"app", rt.spec.name},
         {"max_rps_host", rt.spec.maxRpsHost}, {"max_rps_pim", rt.spec.maxRpsPim}};
  control(j.dump());
  std::ostringstream reason;
  reason << "max RPS host " << rt.spec.maxRpsHost << " (" << host.how() << "), PIM "
         << rt.spec.maxRpsPim << " (" << pim.how() << "), R=" << rt.spec.preference();
  Decision d;
  d.tNs = tNs;
  d.event = "profile";
  d.app = id;
  d.appName = rt.spec.name;
  d.reason = reason.str();
  pending_.push_back(d);
  if (rt.spec.maxRpsHost <= 0 || rt.spec.maxRpsPim <= 0) {
    // No requests while profiling: rank it as neutral rather than refuse it.
    rt.spec.maxRpsHost = rt.spec.maxRpsPim = 1;
    pending_.back().reason += "; no throughput measured, R taken as 1";
  }
}

Observation Engine::observe(std::int64_t tNs, const LatencyBatch& batch) {
  Observation obs;
  obs.tNs = tNs;
  obs.freeBytes = freeBytesPerStack();
  obs.memLatencyNs = memLatencyNs_;
  for (const auto& [name, st] : batch.stats) {
    const AppId id = idOf(name);
    if (id == kBePool) {
      if (exited_.count(name) != 0) continue;  // its last lines, after its exit
      if (unknownNoted_.insert(name).second) {
        log_->note(tNs, "input-error",
                   "stats for unknown app \"" + name +
                       "\"; add it to the config's apps with its qos_ms, or send a start line");
      }
      continue;
    }
    Runtime& rt = apps_.at(id);
    if (!st.tids.empty()) rt.tids = st.tids;
    learnPid(id, rt, st.pid);  // learnt, or restarted
    if (rt.inPolicy) {
      obs.stats[id] = st;
      if (st.count > 0) log_->countInterval(name, st.p99Ns > rt.spec.qosNs);
    }
  }
  return obs;
}

void Engine::tick(std::int64_t tNs) {
  const double cpu0 = threadCpuSeconds();
  const std::int64_t host0 = hostNs();
  if (lastTickHostNs_ >= 0) log_->addIntervalGap(host0 - lastTickHostNs_, tNs);
  lastTickHostNs_ = host0;
  now_ = tNs;
  std::int64_t mark = host0;
  auto phase = [this, &mark](const char* name) {
    const std::int64_t now = hostNs();
    log_->addPhaseTime(name, now - mark);
    mark = now;
  };
  machine_->housekeeping();
  const LatencyBatch batch = source_->poll();
  handleEvents(tNs, batch);
  reapExited(tNs);
  estimateLatencies(tNs);
  phase("input");
  Observation obs = observe(tNs, batch);

  // Apps that still need a profile are profiled before the policy sees them.
  std::vector<AppId> ids;
  for (const auto& entry : apps_) ids.push_back(entry.first);
  std::vector<AppId> ready;
  for (AppId id : ids) {
    auto it = apps_.find(id);
    if (it == apps_.end() || it->second.inPolicy) continue;
    Runtime& rt = it->second;
    if (rt.arrives && rt.handle.pid <= 0) continue;  // not started yet
    const bool known = rt.spec.maxRpsHost > 0 && rt.spec.maxRpsPim > 0;
    if (!known) {
      // Profile an app only once it is live (its pid known from its statistics or a
      // start event): a window that closes while the service still loads its data
      // would measure nothing.
      if (rt.profilePhase == 0 && rt.handle.pid <= 0) continue;
      static const std::vector<IntervalStats> kNone;
      auto lines = batch.lines.find(rt.spec.name);
      profile(tNs, id, rt, lines == batch.lines.end() ? kNone : lines->second);
      if (apps_.count(id) == 0) continue;  // gone while being profiled
      if (rt.profilePhase != 0) continue;
    }
    ready.push_back(id);
  }
  std::vector<Decision> out;
  const double policy0 = threadCpuSeconds();
  if (!started_ && !ready.empty()) {
    std::map<AppId, AppSpec> initial;
    for (AppId id : ready) initial[id] = apps_.at(id).spec;
    policy_->start(initial, obs, out);
    started_ = true;
  } else {
    for (AppId id : ready) policy_->arrive(id, apps_.at(id).spec, obs, out);
  }
  for (AppId id : ready) apps_.at(id).inPolicy = true;
  if (started_) policy_->step(obs, out);
  const double policySeconds = threadCpuSeconds() - policy0;
  for (Decision& d : out) pending_.push_back(std::move(d));
  phase("policy");
  apply(tNs);
  phase("apply");
  concentrate(tNs);
  tier(tNs);
  if (options_.replicateShared) {
    for (AppId id : ready) {
      if (apps_.count(id) != 0) replicateOnStart(tNs, id);
    }
  }
  migrateForLocality(tNs);
  phase("gather");
  if (options_.hotnessScanIntervals > 0) {
    // Each app's scan walks all its pages: apps take turns (app id offsets the round),
    // so no interval scans them all, and none scans in the first interval.
    const auto n = static_cast<std::uint64_t>(options_.hotnessScanIntervals);
    ++ticks_;
    for (const auto& [id, rt] : apps_) {
      if (rt.inPolicy && rt.handle.pid > 0 && (ticks_ + static_cast<std::uint64_t>(id)) % n == 0) {
        machine_->trackHotness(rt.handle.pid);
      }
    }
  }
  phase("hotness");
  for (std::size_t i = 0; i < pending_.size(); ++i) place(pending_[i], static_cast<long>(i));
  phase("plan");
  runMoves(tNs);
  phase("moves");
  for (const Decision& d : pending_) log_->write(d);
  pending_.clear();
  notePlaced(tNs);
  log_->addIntervalCost(policySeconds, threadCpuSeconds() - cpu0);
}

void Engine::notePlaced(std::int64_t tNs) {
  if (placedWritten_ || options_.placedPath.empty()) return;
  const bool gathers = options_.staticPlacement == StaticPlacement::Concentrated;
  for (const auto& [id, rt] : apps_) {
    if (rt.arrives) continue;  // starts later: not part of the initial allocation
    if (rt.handle.pid <= 0) return;  // placed by its cgroup's CPUs alone, not yet moved in
    if (!rt.inPolicy && rt.profilePhase == 0) return;
    if (rt.inPolicy && gathers && !rt.concentrated &&
        applied_.residentStack.count(id) != 0) {
      return;  // its CC gather is still to be planned
    }
    for (const MoveJob& job : moves_) {
      if (job.app == id && job.gather) return;  // still gathering
    }
  }
  // Atomic: the harness sees the whole file or none.
  const std::string temporary = options_.placedPath + ".tmp";
  {
    std::ofstream out(temporary);
    out << tNs << "\n";
    if (!out) {
      log_->note(tNs, "backend-error", "cannot write " + temporary);
      placedWritten_ = true;
      return;
    }
  }
  if (std::rename(temporary.c_str(), options_.placedPath.c_str()) != 0) {
    log_->note(tNs, "backend-error", "cannot rename " + temporary + " to " + options_.placedPath);
  } else {
    log_->note(tNs, "placed", "every app present at the start placed (or being profiled) and "
               "gathered: " + options_.placedPath);
  }
  placedWritten_ = true;
}

void Engine::apply(std::int64_t tNs) {
  if (!started_) return;
  const Assignment want = policy_->assignment();
  if (want.beCpus != applied_.beCpus) {
    const Status st = machine_->setBeCpus(want.beCpus);
    if (st.ok) {
      // The BE jobs' CPUs over time (a lifted quota's line follows them).
      Decision d;
      d.tNs = tNs;
      d.event = "be-cpus";
      d.appName = "be";
      d.fromCores = applied_.beCpus;
      d.toCores = want.beCpus;
      d.reason = "CPUs of the best-effort jobs (cpuset)";
      log_->write(d);
    } else {
      log_->note(tNs, "backend-error", "BE cpuset: " + st.error);
    }
    if (options_.beQuota > 0 && want.beQuotaCores <= 0) machine_->setBeQuota(options_.beQuota);
  }
  applyBeQuota(tNs, want);
  std::vector<AppId> gone;
  std::vector<AppId> retry;
  for (const auto& [id, cpus] : want.appCpus) {
    auto rtIt = apps_.find(id);
    if (rtIt == apps_.end()) continue;
    Runtime& rt = rtIt->second;
    const auto old = applied_.appCpus.find(id);
    const auto dedIt = want.dedicatedCpus.find(id);
    const std::vector<int> dedicated = dedIt == want.dedicatedCpus.end() ? std::vector<int>{}
                                                                         : dedIt->second;
    const auto oldDed = applied_.dedicatedCpus.find(id);
    const bool coresChanged = old == applied_.appCpus.end() || old->second != cpus;
    const bool dedChanged =
        oldDed == applied_.dedicatedCpus.end() ? !dedicated.empty() : oldDed->second != dedicated;
    if (!coresChanged && !dedChanged) continue;
    if (coresChanged) {
      const Status st = machine_->setAppCpus(rt.handle, cpus);
      if (!st.ok) {
        if (st.gone) {
          gone.push_back(id);
          continue;
        }
        log_->note(tNs, "backend-error", rt.spec.name + " cpus: " + st.error);
        retry.push_back(id);  // try again next interval
      }
    }
    // A remote PIM core runs one thread of its own (IV-E2); the rest share the others.
    for (auto it = rt.dedicated.begin(); it != rt.dedicated.end();) {
      const bool kept = std::find(dedicated.begin(), dedicated.end(), it->first) != dedicated.end();
      // A new cpuset resets every thread's affinity: pin the kept ones again.
      it = kept && (!coresChanged || machine_->pinThread(it->second, {it->first}).ok)
               ? std::next(it)
               : rt.dedicated.erase(it);
    }
    for (int cpu : dedicated) {
      if (rt.dedicated.count(cpu) != 0) continue;
      // Keep one thread or more for the shared cores; a remote core without a thread of
      // its own is shared with the rest.
      if (rt.dedicated.size() + 1 >= rt.tids.size()) break;
      for (int tid : rt.tids) {
        const bool used = std::any_of(rt.dedicated.begin(), rt.dedicated.end(),
                                      [tid](const auto& p) { return p.second == tid; });
        if (used) continue;
        const Status st = machine_->pinThread(tid, {cpu});
        if (st.ok) {
          rt.dedicated[cpu] = tid;
          break;
        }
        // The thread vanished: try the next one.
      }
    }
    std::vector<int> shared;
    for (int cpu : cpus) {
      if (rt.dedicated.count(cpu) == 0) shared.push_back(cpu);
    }
    if (!rt.dedicated.empty() && !shared.empty()) {
      for (int tid : rt.tids) {
        const bool isDedicated = std::any_of(rt.dedicated.begin(), rt.dedicated.end(),
                                             [tid](const auto& p) { return p.second == tid; });
        if (!isDedicated) machine_->pinThread(tid, shared);
      }
    }
  }
  if (want.beThrottle != applied_.beThrottle || (want.beThrottle != 0 && want.beCpus != applied_.beCpus)) {
    // CPUs that left the BE pool run unthrottled again.
    std::vector<int> released;
    for (int cpu : applied_.beCpus) {
      if (std::find(want.beCpus.begin(), want.beCpus.end(), cpu) == want.beCpus.end()) released.push_back(cpu);
    }
    Status st = released.empty() ? Status::success() : machine_->setBandwidthThrottle(released, 0);
    if (st.ok) st = machine_->setBandwidthThrottle(want.beCpus, want.beThrottle);
    Decision d;
    d.tNs = tNs;
    d.event = st.ok ? "be-throttle" : "backend-error";
    d.appName = "be";
    d.toCores = want.beCpus;
    d.values = {{"level", static_cast<double>(want.beThrottle)}};
    d.reason = st.ok ? "memory-bandwidth throttle of the best-effort CPUs" : "BE throttle: " + st.error;
    log_->write(d);
  }
  applied_ = want;
  for (AppId id : retry) applied_.appCpus.erase(id);
  for (AppId id : gone) appGone(tNs, id, "process gone when its cores changed");
}

// A policy's BE CPU quota in cores, as cpu.max over the BE CPUs; a policy that sets none
// leaves the config's static be.cpu_max_fraction (or no limit).
void Engine::applyBeQuota(std::int64_t tNs, const Assignment& want) {
  const bool changed = want.beQuotaCores != applied_.beQuotaCores;
  const bool resize = want.beQuotaCores > 0 && want.beCpus.size() != applied_.beCpus.size();
  if (!changed && !resize) return;
  const double fraction = want.beQuotaCores > 0 && !want.beCpus.empty()
                              ? want.beQuotaCores / static_cast<double>(want.beCpus.size())
                              : options_.beQuota;
  const Status st = machine_->setBeQuota(fraction);
  if (!changed) return;  // the same quota over a new pool: nothing new to log
  Decision d;
  d.tNs = tNs;
  d.event = st.ok ? "be-quota" : "backend-error";
  d.appName = "be";
  d.toCores = want.beCpus;
  d.values = {{"cores", want.beQuotaCores}};
  d.reason = st.ok ? "CPU quota of the best-effort jobs (cpu.max)" : "BE quota: " + st.error;
  log_->write(d);
}

// Seed 003: an app's memory latency = cache latency + the mean cycles its CPUs' misses
// stayed outstanding, each CPU's cycles at its own clock (cycles counted over the
// interval / its length), over the CPUs the app held during the interval.
void Engine::estimateLatencies(std::int64_t tNs) {
  memLatencyNs_.clear();
  std::map<int, MissSample> now = machine_->missCounters();
  if (now.empty()) return;
  const double seconds = static_cast<double>(tNs - lastMissesNs_);
  for (const auto& [id, rt] : apps_) {
    const auto cpus = applied_.appCpus.find(id);
    if (lastMisses_.empty() || !rt.inPolicy || cpus == applied_.appCpus.end()) continue;
    double outstandingNs = 0;
    std::uint64_t misses = 0;
    for (int cpu : cpus->second) {
      const auto a = lastMisses_.find(cpu);
      const auto b = now.find(cpu);
      if (a == lastMisses_.end() || b == now.end() || b->second.cycles <= a->second.cycles) continue;
      const double ghz = static_cast<double>(b->second.cycles - a->second.cycles) / seconds;
      outstandingNs += static_cast<double>(b->second.outstandingCycles - a->second.outstandingCycles) / ghz;
      misses += b->second.misses - a->second.misses;
    }
    if (misses == 0) continue;
    Decision d;
    d.tNs = tNs;
    d.event = "latency-estimate";
    d.app = id;
    d.appName = rt.spec.name;
    d.toCores = cpus->second;
    const double estimate = options_.latencyCacheNs + outstandingNs / static_cast<double>(misses);
    memLatencyNs_[id] = estimate;
    d.values = {{"estimate_ns", estimate}, {"misses", static_cast<double>(misses)}};
    d.reason = "cache latency + outstanding miss time / misses over the app's CPUs (seed 003)";
    log_->write(d);
  }
  lastMisses_ = std::move(now);
  lastMissesNs_ = tNs;
}

std::optional<TieringMode> parseTieringMode(const std::string& name) {
  if (name == "promote") return TieringMode::Promote;
  if (name == "heteroos-lru") return TieringMode::HeteroOsLru;
  if (name == "heteroos-coordinated") return TieringMode::HeteroOsCoordinated;
  return std::nullopt;
}

const char* toString(TieringMode mode) {
  switch (mode) {
    case TieringMode::Promote: return "promote";
    case TieringMode::HeteroOsLru: return "heteroos-lru";
    case TieringMode::HeteroOsCoordinated: return "heteroos-coordinated";
  }
  return "?";
}

namespace {
// The first eight of a ranking's counts, as a decision's reason lists them.
std::string firstCounts(const std::vector<std::uint32_t>& counts) {
  std::string out;
  for (std::size_t i = 0; i < counts.size() && i < 8; ++i) {
    out += (i ? ", " : "") + std::to_string(counts[i]);
  }
  return out + (counts.size() > 8 ? ", ..." : "");
}

// A thread migration's decision says which pages it planned by what: their hotness,
// hottest first (the first eight), and how many were seen hot at all.
void describePlan(Decision& d, const std::vector<PageInfo>& candidates,
                  const std::vector<std::uintptr_t>& planned, int cpu, const std::string& source) {
  std::map<std::uintptr_t, std::uint32_t> hotness;
  for (const PageInfo& pg : candidates) hotness[pg.addr] = pg.hotness;
  double sum = 0;
  std::size_t hot = 0;
  std::vector<std::uint32_t> counts;
  for (const std::uintptr_t a : planned) {
    counts.push_back(hotness[a]);
    sum += counts.back();
    hot += counts.back() > 0;
  }
  d.values["planned_pages"] = static_cast<double>(planned.size());
  d.values["planned_hot_pages"] = static_cast<double>(hot);
  d.values["planned_hotness_sum"] = sum;
  d.reason += "; " + std::to_string(planned.size()) + " pages planned for cpu " +
              std::to_string(cpu) + ", hottest first by " +
              (source == "hw" ? "access count" : "idle scans seen touched") + " (" + source +
              "): " + firstCounts(counts);
}

// Beside it, the shadow source's choice of as many pages from the same candidates (ties
// in address order, not the source in use's, so that agreement is not inherited):
// how many pages both chose, and how many candidates tie at the shadow's cut (with
// idle tracking's 0/1 counts most do, and the overlap is then partly chance).
void describeShadowPlan(Decision& d, const std::vector<PageInfo>& candidates,
                        const std::vector<std::uintptr_t>& planned, const std::string& source,
                        const std::map<std::uintptr_t, std::uint32_t>& counts) {
  if (planned.empty() || candidates.empty()) return;
  auto count = [&counts](std::uintptr_t a) {
    const auto it = counts.find(a);
    return it == counts.end() ? 0U : it->second;
  };
  std::vector<std::uintptr_t> ranked;
  ranked.reserve(candidates.size());
  for (const PageInfo& pg : candidates) ranked.push_back(pg.addr);
  std::sort(ranked.begin(), ranked.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&count](std::uintptr_t a, std::uintptr_t b) { return count(a) > count(b); });
  const std::size_t k = std::min(planned.size(), ranked.size());
  const std::set<std::uintptr_t> chosen(planned.begin(), planned.end());
  std::size_t common = 0;
  std::size_t hot = 0;
  std::vector<std::uint32_t> shadowCounts;
  for (std::size_t i = 0; i < k; ++i) {
    common += chosen.count(ranked[i]);
    shadowCounts.push_back(count(ranked[i]));
    hot += shadowCounts.back() > 0;
  }
  const std::uint32_t cut = count(ranked[k - 1]);
  std::size_t tied = 0;
  for (const std::uintptr_t a : ranked) tied += count(a) == cut;
  std::size_t plannedSeen = 0;  // the pages in use's choice that the shadow saw hot at all
  for (const std::uintptr_t a : planned) plannedSeen += count(a) > 0;
  d.values["shadow_planned_pages"] = static_cast<double>(k);
  d.values["shadow_common_pages"] = static_cast<double>(common);
  d.values["shadow_hot_pages"] = static_cast<double>(hot);
  d.values["shadow_tied_at_cut"] = static_cast<double>(tied);
  d.values["shadow_hot_among_planned"] = static_cast<double>(plannedSeen);
  d.values["candidate_pages"] = static_cast<double>(candidates.size());
  d.reason += "; " + source + " (shadow) would have chosen " + std::to_string(k) + " of the " +
              std::to_string(candidates.size()) + " pages: " + std::to_string(common) +
              " the same, counts " + firstCounts(shadowCounts) + " (" +
              std::to_string(tied) + " pages tied at " + std::to_string(cut) + "); " +
              std::to_string(plannedSeen) + " of the chosen pages " + source + " saw hot";
}
}  // namespace

std::set<std::uintptr_t> Engine::queuedPages(
    const std::function<bool(const MoveJob&)>& which) const {
  std::set<std::uintptr_t> out;
  for (const MoveJob& j : moves_) {
    if (which(j)) out.insert(j.pages.begin() + static_cast<long>(j.next), j.pages.end());
  }
  return out;
}

void Engine::queueTierMove(std::int64_t tNs, AppId id, const Runtime& rt,
                           std::vector<std::uintptr_t> pages, int node, const std::string& event,
                           const std::string& why, std::map<std::string, double> values,
                           int owner) {
  if (pages.empty()) return;
  Decision d;
  d.tNs = tNs;
  d.event = event;
  d.app = id;
  d.appName = rt.spec.name;
  d.values = std::move(values);
  d.values["pages"] = static_cast<double>(pages.size());
  d.values["to_node"] = static_cast<double>(node);
  d.reason = why;
  pending_.push_back(d);
  MoveJob job;
  job.app = id;
  job.pid = owner;
  job.node = node;
  job.purpose = event + " to node " + std::to_string(node);
  job.pages = std::move(pages);
  job.decision = static_cast<long>(pending_.size()) - 1;
  enqueueMove(std::move(job));
}

// Seed 004's dynamic tiering beside its allocation policies (hot slow-tier pages up to
// the stack with the most room; under fast-always, cold pages down when a stack runs
// short), or seed 002's HeteroOS-LRU eviction, alone or with that promotion.
void Engine::tier(std::int64_t tNs) {
  if (options_.tieringPages == 0 || !isTiered(options_.staticPlacement)) return;
  const bool promote = options_.tiering != TieringMode::HeteroOsLru;
  const bool lru = options_.tiering != TieringMode::Promote;
  const std::set<std::uintptr_t> queued =
      queuedPages([](const MoveJob& j) { return j.pid == 0; });
  const auto freeBytes = freeBytesPerStack();  // by stack, not node
  for (auto& [id, rt] : apps_) {
    if (!rt.inPolicy || rt.handle.pid <= 0) continue;
    int roomiest = -1;  // a stack
    std::uint64_t most = options_.reserveBytes;
    for (const auto& [stack, bytes] : freeBytes) {
      if (bytes > most) {
        most = bytes;
        roomiest = stack;
      }
    }
    if (promote && roomiest > 0) {
      std::vector<std::uintptr_t> hot;
      const std::size_t room = (most - options_.reserveBytes) / options_.pageBytes;
      for (const PageInfo& p : machine_->hotPages(rt.handle.pid, options_.slowNode)) {
        if (hot.size() >= std::min(options_.tieringPages, room) || p.hotness == 0) break;
        if (queued.count(p.addr) == 0) hot.push_back(p.addr);
      }
      queueTierMove(tNs, id, rt, std::move(hot), topology_->nodeOf(roomiest), "promote",
                    "hot pages of the slow tier (node " + std::to_string(options_.slowNode) +
                        ") up to the stack with the most room");
    }
    if (lru) {
      evictInactive(tNs, id, rt, freeBytes, queued);
      continue;
    }
    if (options_.staticPlacement != StaticPlacement::FastAlways) continue;
    for (const auto& [stack, bytes] : freeBytes) {
      if (bytes >= 2 * options_.reserveBytes) continue;
      std::vector<PageInfo> pages = machine_->hotPages(rt.handle.pid, topology_->nodeOf(stack));
      std::vector<std::uintptr_t> cold;
      for (auto it = pages.rbegin(); it != pages.rend() && cold.size() < options_.tieringPages; ++it) {
        if (it->hotness > 0) break;  // hottest first: from the end, the coldest
        if (queued.count(it->addr) == 0) cold.push_back(it->addr);
      }
      queueTierMove(tNs, id, rt, std::move(cold), options_.slowNode, "demote",
                    "fast-always: stack " + std::to_string(stack) +
                        " short of twice its reserve; its cold pages down to the slow tier");
    }
  }
}

// Page migration based on locality: a hot page that one CPU alone touches goes to that
// CPU's node (shared pages stay: replication is for them). Hottest first, at most
// localityPages an interval per app, only into free memory above the reserve.
void Engine::migrateForLocality(std::int64_t tNs) {
  if (options_.localityPages == 0) return;
  if (!machine_->hasPageCounters()) {
    if (!localityNoted_) {
      log_->note(tNs, "locality", "no page-access counters (QEMU, or a gem5 board made "
                                  "without counters): locality migration moves nothing");
    }
    localityNoted_ = true;
    return;
  }
  if (!localityReset_) {
    // The set-up's accesses (a loader thread touching every page first) say nothing of
    // who touches a page now: count afresh, and move from the next interval on.
    localityReset_ = true;
    const bool reset = machine_->resetPageCounters();
    log_->note(tNs, "locality", reset ? "page-access counters reset: counting who touches "
                                        "each page from now on"
                                      : "could not reset the page-access counters");
    return;
  }
  const auto every = static_cast<std::uint64_t>(std::max(1, options_.hotnessScanIntervals));
  if (++localityTicks_ % every != 0) return;
  auto freeBytes = machine_->freeBytesPerNode();
  for (auto& [id, rt] : apps_) {
    if (!rt.inPolicy || rt.handle.pid <= 0) continue;
    const std::set<std::uintptr_t> queued =
        queuedPages([id = id](const MoveJob& j) { return j.app == id && j.pid == 0; });
    std::map<int, std::vector<std::uintptr_t>> toNode;
    std::map<int, std::uint64_t> count;  // accesses of the pages planned, per target
    std::size_t planned = 0;
    for (const AccessedPage& p : machine_->accessedPages(rt.handle.pid)) {
      if (planned >= options_.localityPages) break;
      if (p.shared || p.cpu < 0 || p.count == 0 || queued.count(p.addr) != 0) continue;
      const int core = topology_->coreByCpu(p.cpu);
      if (core < 0) continue;
      // The CPU's stack's node (host cores: node 0); freeBytes and p.node are nodes.
      const int node = topology_->nodeOf(topology_->core(core).stack);
      if (node < 0 || node == p.node) continue;
      auto room = freeBytes.find(node);
      if (room == freeBytes.end() || room->second < options_.reserveBytes + options_.pageBytes) {
        continue;
      }
      room->second -= options_.pageBytes;
      toNode[node].push_back(p.addr);
      count[node] += p.count;
      ++planned;
    }
    for (auto& [node, pages] : toNode) {
      queueTierMove(tNs, id, rt, std::move(pages), node, "locality",
                    "hot private pages to the node of the one CPU that touches them "
                    "(page-access counters)",
                    {{"accesses", static_cast<double>(count[node])}});
    }
  }
}

// Replication beside a static placement: the app's shared read-only data on every node
// with memory that its cores sit on, once, when it starts.
void Engine::replicateOnStart(std::int64_t tNs, AppId id) {
  const Runtime& rt = apps_.at(id);
  std::set<int> stacks;  // 0: the host's
  const auto cpus = applied_.appCpus.find(id);
  for (const Core& c : topology_->cores) {
    if (cpus == applied_.appCpus.end() ||
        std::find(cpus->second.begin(), cpus->second.end(), c.cpu) != cpus->second.end()) {
      stacks.insert(c.stack);
    }
  }
  const auto freeBytes = machine_->freeBytesPerNode();
  Decision d;
  d.tNs = tNs;
  d.event = "replicate-static";
  d.app = id;
  d.appName = rt.spec.name;
  for (int stack : stacks) {
    const auto f = freeBytes.find(topology_->nodeOf(stack));
    if (f == freeBytes.end() || f->second == 0) continue;  // a memoryless host node
    PlacementRequest p;
    p.kind = PlacementRequest::Kind::Replicate;
    p.app = id;
    p.stack = stack;  // place() asks for its node
    d.placement.push_back(p);
  }
  // Asked through the control file (and the app's socket, if it has one): place().
  d.reason = "replication beside the static placement: shared read-only data on every "
             "node the app's cores sit on";
  if (!d.placement.empty()) pending_.push_back(std::move(d));
}

// HeteroOS-LRU: a stack below its watermark (the reserve plus two intervals of on-demand
// allocation at the tiering rate) gives up the pages the kernel's LRU holds inactive,
// the app's heap and the page cache of its open files, to the slow tier.
void Engine::evictInactive(std::int64_t tNs, AppId id, const Runtime& rt,
                           const std::map<int, std::uint64_t>& freeBytes,
                           const std::set<std::uintptr_t>& queued) {
  const std::uint64_t watermark =
      options_.reserveBytes + 2 * options_.tieringPages * options_.pageBytes;
  const bool cacheQueued = std::any_of(moves_.begin(), moves_.end(), [id](const MoveJob& j) {
    return j.app == id && j.pid > 0;
  });
  // freeBytes is by stack; the machine's pages are by node.
  std::set<int> shortStacks;
  std::set<int> shortNodes;
  for (const auto& [stack, bytes] : freeBytes) {
    if (bytes < watermark) {
      shortStacks.insert(stack);
      shortNodes.insert(topology_->nodeOf(stack));
    }
  }
  auto why = [&](int stack) {
    return "HeteroOS-LRU: stack " + std::to_string(stack) + " below its watermark (" +
           std::to_string(freeBytes.at(stack) >> 20) + " MiB free, " +
           std::to_string(watermark >> 20) + " MiB kept); ";
  };
  for (int stack : shortStacks) {
    std::vector<std::uintptr_t> heap;
    for (std::uintptr_t a : machine_->inactivePages(rt.handle.pid, topology_->nodeOf(stack),
                                                    options_.tieringPages)) {
      if (queued.count(a) == 0) heap.push_back(a);
    }
    queueTierMove(tNs, id, rt, std::move(heap), options_.slowNode, "evict",
                  why(stack) + "inactive heap pages down to the slow tier",
                  {{"free_mib", static_cast<double>(freeBytes.at(stack) >> 20)}});
  }
  // Page-cache pages are addresses in the agent's own mappings, valid until the next
  // scan of this app: one scan an interval for all its short stacks, and none while the
  // last one's pages still wait to move.
  if (shortStacks.empty() || cacheQueued) return;
  const Machine::FilePages files =
      machine_->inactiveFilePages(rt.handle.pid, shortNodes, options_.tieringPages);
  for (int stack : shortStacks) {
    std::vector<std::uintptr_t> pages;
    for (const PageInfo& p : files.pages) {
      if (p.node == topology_->nodeOf(stack)) pages.push_back(p.addr);
    }
    queueTierMove(tNs, id, rt, std::move(pages), options_.slowNode, "evict-cache",
                  why(stack) + "inactive page-cache pages of its " + std::to_string(files.files) +
                      " open files down to the slow tier",
                  {{"free_mib", static_cast<double>(freeBytes.at(stack) >> 20)},
                   {"files", static_cast<double>(files.files)},
                   {"cached_pages", static_cast<double>(files.cached)}},
                  files.owner);
  }
}

void Engine::concentrate(std::int64_t tNs) {
  if (options_.staticPlacement != StaticPlacement::Concentrated) return;
  for (auto& [id, rt] : apps_) {
    if (!rt.inPolicy || rt.concentrated || rt.handle.pid <= 0) continue;
    const auto res = applied_.residentStack.find(id);
    if (res == applied_.residentStack.end()) continue;  // the policy keeps no resident stack
    rt.concentrated = true;
    // Its private pages on the other stacks, hottest first when the gather may be cut
    // short by the reserve or a full stack, so that it has moved the pages that matter most.
    const int residentNode = topology_->nodeOf(res->second);
    MoveJob job;
    job.app = id;
    job.node = residentNode;
    job.purpose = "gather on resident stack " + std::to_string(res->second);
    job.gather = true;
    auto elsewhere = [&](int node) {
      const int stack = topology_->stackOf(node);
      return stack >= 1 && stack != res->second;
    };
    // numa_maps first: an app started under CC on its resident stack has nothing to
    // gather, and listing every page (hotPages) is the costly part.
    std::uint64_t away = 0;
    for (const auto& [node, pages] : machine_->pagesPerNode(rt.handle.pid)) {
      if (elsewhere(node)) away += pages;
    }
    if (away > 0) {
      // With the hardware counters, hotness costs a query of every memory (in gem5 it
      // delayed the agent's first intervals by 15 ms): asked only when the stack's free
      // memory above the reserve, less what moves already queued there will take (other
      // apps' gathers among them), cannot take every page. Idle tracking's costs nothing.
      bool ordered = machine_->hotnessSource() != "hw";
      if (!ordered) {
        const auto freeBytes = machine_->freeBytesPerNode();
        const auto f = freeBytes.find(residentNode);
        const std::uint64_t free = f == freeBytes.end() ? 0 : f->second;
        const std::uint64_t queued =
            queuedPages([&](const MoveJob& j) { return j.node == residentNode; }).size();
        ordered = free < options_.reserveBytes + (queued + away) * options_.pageBytes;
      }
      const std::vector<PageInfo> pages = ordered ? machine_->hotPages(rt.handle.pid, -1)
                                                  : machine_->pagesOn(rt.handle.pid, -1);
      for (const PageInfo& page : pages) {
        if (elsewhere(page.node)) job.pages.push_back(page.addr);
      }
    }
    Decision d;
    d.tNs = tNs;
    d.event = "concentrate";
    d.app = id;
    d.appName = rt.spec.name;
    d.reason = "CC: " + std::to_string(job.pages.size()) + " pages to gather on resident stack " +
               std::to_string(res->second);
    pending_.push_back(d);
    job.decision = static_cast<long>(pending_.size()) - 1;
    if (!job.pages.empty()) enqueueMove(std::move(job));
  }
}

void Engine::reapExited(std::int64_t tNs) {
  std::vector<std::pair<AppId, int>> exited;
  for (const auto& [id, rt] : apps_) {
    if (rt.handle.pid > 0 && !machine_->alive(rt.handle)) exited.emplace_back(id, rt.handle.pid);
  }
  for (const auto& [id, pid] : exited) {
    appGone(tNs, id, "process " + std::to_string(pid) + " exited");
  }
}

std::int64_t Engine::hostNs() const { return options_.clock ? options_.clock() : monotonicNs(); }

void Engine::enqueueMove(MoveJob job) { moves_.push_back(std::move(job)); }

void Engine::runMoves(std::int64_t tNs) {
  // What each job did this interval, booked to the decision that started it, or to a
  // "migrate" decision when it goes on from an earlier interval.
  struct Progress {
    MoveJob job;
    std::uint64_t moved = 0;
    std::uint64_t alreadyThere = 0;
    std::string notes;
    bool finished = false;
  };
  std::vector<Progress> touched;
  std::vector<std::pair<AppId, std::string>> gone;
  const std::int64_t start = hostNs();
  auto note = [](std::string& notes, const std::string& s) {
    if (!s.empty() && notes.find(s) == std::string::npos) notes += "; " + s;
  };
  while (!moves_.empty() && hostNs() - start < options_.migrationBudgetNs) {
    MoveJob& job = moves_.front();
    if (touched.empty() || touched.back().job.app != job.app ||
        touched.back().job.purpose != job.purpose || touched.back().finished) {
      touched.push_back({job, 0, 0, "", false});
    }
    Progress& prog = touched.back();
    Runtime* rt = job.app == kBePool ? nullptr : &apps_.at(job.app);
    const std::size_t left = job.pages.size() - job.next;
    // The reserve is checked before every chunk: other processes allocate meanwhile.
    // Every node: a demotion's target is the slow tier, not a stack.
    const auto freeBytes = machine_->freeBytesPerNode();
    const auto f = freeBytes.find(job.node);
    const std::uint64_t free = f == freeBytes.end() ? 0 : f->second;
    const std::uint64_t room =
        free > options_.reserveBytes ? (free - options_.reserveBytes) / options_.pageBytes : 0;
    std::string stop;
    if (room == 0) {
      // A stack is named as the policies number it; the slow tier by its node.
      const int stack = topology_->stackOf(job.node);
      const std::string target = stack >= 1 ? "stack " + std::to_string(stack)
                                            : "node " + std::to_string(job.node);
      stop = "skipped " + std::to_string(left) + " pages: " + target +
             (options_.reserveBytes > 0 ? " at its reserve (" +
                                              std::to_string(options_.reserveBytes >> 20) +
                                              " MiB kept free)"
                                        : " has no free memory");
    } else {
      const std::size_t n = std::min<std::size_t>(
          {std::max<std::size_t>(options_.migrationChunkPages, 1), left,
           static_cast<std::size_t>(room)});
      const std::vector<std::uintptr_t> chunk(job.pages.begin() + static_cast<long>(job.next),
                                              job.pages.begin() + static_cast<long>(job.next + n));
      // The pages are in the app's address space unless the job names another (a best-
      // effort process, or the agent's own mapping of page-cache pages).
      const int pid = job.pid > 0 || rt == nullptr ? job.pid : rt->handle.pid;
      const MoveResult r = machine_->movePages(pid, chunk, job.node);
      job.next += n;
      // Pages of the plan found on the target already left their node with this
      // migration (a transparent huge page moves whole for any of its addresses): they
      // are booked, and come back with the core, like the pages the call moved.
      prog.moved += r.moved + r.alreadyThere;
      prog.alreadyThere += r.alreadyThere;
      if (rt && job.followsCpu >= 0) {
        auto& booked = rt->movedFor[job.followsCpu];
        booked.insert(booked.end(), r.movedPages.begin(), r.movedPages.end());
        booked.insert(booked.end(), r.foundThere.begin(), r.foundThere.end());
      }
      note(prog.notes, r.why(job.node));
      if (r.status.gone) {
        if (rt) gone.emplace_back(job.app, "process gone (ESRCH) while its pages moved");
        stop = "stopped";
      } else if (r.targetFull) {
        stop = std::to_string(job.pages.size() - job.next) + " pages not moved";
      }
    }
    if (!stop.empty() || job.next >= job.pages.size()) {
      note(prog.notes, stop);
      prog.finished = true;
      moves_.pop_front();
    } else {
      prog.job.next = job.next;
    }
  }
  for (MoveJob& job : moves_) {
    // Left for the next intervals: from now on its progress is a "migrate" decision.
    for (Progress& prog : touched) {
      if (!prog.finished && prog.job.app == job.app && prog.job.purpose == job.purpose) {
        note(prog.notes, std::to_string(job.pages.size() - job.next) +
                             " pages left for the next intervals (migration budget)");
      }
    }
    if (job.decision >= 0 && touched.end() == std::find_if(touched.begin(), touched.end(),
                                                           [&job](const Progress& p) {
                                                             return p.job.decision == job.decision;
                                                           })) {
      pending_[static_cast<std::size_t>(job.decision)].reason +=
          "; waits for the migration budget of a later interval";
    }
    job.decision = -1;
  }
  for (Progress& prog : touched) {
    if (prog.alreadyThere > 0) {
      prog.notes += "; " + std::to_string(prog.alreadyThere) +
                    " of them found on the target already (taken along by a huge page)";
    }
    if (prog.job.decision >= 0) {
      Decision& d = pending_[static_cast<std::size_t>(prog.job.decision)];
      d.pagesMoved += prog.moved;
      d.reason += prog.notes;
      continue;
    }
    auto rt = apps_.find(prog.job.app);
    Decision d;
    d.tNs = tNs;
    d.event = "migrate";
    d.app = prog.job.app;
    d.appName = prog.job.app == kBePool ? "be" : rt == apps_.end() ? "" : rt->second.spec.name;
    d.pagesMoved = prog.moved;
    d.reason = prog.job.purpose + (prog.finished ? ": done" : ": going on") + prog.notes;
    pending_.push_back(d);
  }
  for (const auto& [id, why] : gone) appGone(tNs, id, why);
}

void Engine::place(Decision& d, long index) {
  using K = PlacementRequest::Kind;
  const auto freeBytes = freeBytesPerStack();
  for (const PlacementRequest& p : d.placement) {
    if (p.kind == K::MoveBePages) {
      moveBePages(p, d, index);
      continue;
    }
    auto rtIt = apps_.find(p.app);
    if (rtIt == apps_.end()) continue;
    Runtime& rt = rtIt->second;
    const int cpu = p.core >= 0 ? topology_->core(p.core).cpu : -1;
    switch (p.kind) {
      case K::MigrateThreadTo: {
        const auto resIt = applied_.residentStack.find(p.app);
        // The resident stack's node; -1 (every node) without one.
        const int resident =
            resIt == applied_.residentStack.end() ? -1 : topology_->nodeOf(resIt->second);
        // Pages already on their way elsewhere are not this core's to take.
        const std::set<std::uintptr_t> queued =
            queuedPages([&p](const MoveJob& j) { return j.app == p.app; });
        std::vector<PageInfo> pages = machine_->hotPages(rt.handle.pid, resident);
        pages.erase(std::remove_if(pages.begin(), pages.end(),
                                   [&queued](const PageInfo& pg) { return queued.count(pg.addr) != 0; }),
                    pages.end());
        const auto fIt = freeBytes.find(p.stack);
        const MigrationPlan plan =
            planThreadMigration(pages, std::max(rt.spec.threads, static_cast<int>(rt.tids.size())),
                                fIt == freeBytes.end() ? 0 : fIt->second, options_.reserveBytes,
                                options_.pageBytes);
        if (plan.limitedByMemory) {
          d.reason += "; stack " + std::to_string(p.stack) +
                      " has no more free memory above its reserve (" +
                      std::to_string(options_.reserveBytes >> 20) + " MiB): " +
                      std::to_string(plan.pages.size()) + " pages planned";
        }
        rt.movedFor[cpu];  // booked as they move (runMoves), never from the plan
        if (plan.pages.empty()) break;
        describePlan(d, pages, plan.pages, cpu, machine_->hotnessSource());
        if (const std::string shadow = machine_->shadowHotnessSource(); !shadow.empty()) {
          describeShadowPlan(d, pages, plan.pages, shadow,
                             machine_->shadowHotness(rt.handle.pid, resident));
        }
        MoveJob job;
        job.app = p.app;
        job.node = topology_->nodeOf(p.stack);
        job.followsCpu = cpu;
        job.purpose = "pages of core " + std::to_string(cpu) + "'s thread";
        job.pages = plan.pages;
        job.decision = index;
        enqueueMove(std::move(job));
        break;
      }
      case K::MigrateThreadBack: {
        // Pages still queued for the core stay where they are.
        moves_.erase(std::remove_if(moves_.begin(), moves_.end(),
                                    [&](const MoveJob& j) {
                                      return j.app == p.app && j.followsCpu == cpu;
                                    }),
                     moves_.end());
        auto mIt = rt.movedFor.find(cpu);
        if (mIt == rt.movedFor.end()) break;
        MoveJob job;
        job.app = p.app;
        job.node = topology_->nodeOf(p.stack);
        job.purpose = "pages of core " + std::to_string(cpu) + "'s thread, back";
        job.pages = std::move(mIt->second);
        job.decision = index;
        rt.movedFor.erase(mIt);
        if (!job.pages.empty()) enqueueMove(std::move(job));
        break;
      }
      case K::MoveBePages:
        break;  // handled above: no LC app
      case K::Replicate:
      case K::DropReplicas: {
        // The harness and the service's socket take a node.
        const int node = topology_->nodeOf(p.stack);
        json j{{"t_ns", d.tNs}, {"event", p.kind == K::Replicate ? "replicate" : "drop-replicas"},
               {"app", rt.spec.name}, {"node", node}};
        control(j.dump());
        serviceCommand(rt, std::string(p.kind == K::Replicate ? "replicate " : "drop ") +
                               std::to_string(node), d);
        break;
      }
    }
  }
}

// BALM's increment: a share of each BE process's pages on one stack, hottest first, to
// another; queued like every move (the migration budget, the target's reserve).
void Engine::moveBePages(const PlacementRequest& p, Decision& d, long index) {
  std::uint64_t planned = 0;
  const std::vector<int> pids = machine_->bePids();
  for (int pid : pids) {
    const std::set<std::uintptr_t> queued =
        queuedPages([pid](const MoveJob& j) { return j.app == kBePool && j.pid == pid; });
    std::vector<std::uintptr_t> pages;
    for (const PageInfo& page : machine_->hotPages(pid, topology_->nodeOf(p.fromStack))) {
      if (queued.count(page.addr) == 0) pages.push_back(page.addr);
    }
    const auto n = static_cast<std::size_t>(std::ceil(p.fraction * static_cast<double>(pages.size())));
    pages.resize(std::min(n, pages.size()));
    if (pages.empty()) continue;
    planned += pages.size();
    MoveJob job;
    job.pid = pid;
    job.node = topology_->nodeOf(p.stack);
    job.purpose = "best-effort pages of pid " + std::to_string(pid) + " off stack " +
                  std::to_string(p.fromStack);
    job.pages = std::move(pages);
    job.decision = index;
    enqueueMove(std::move(job));
  }
  d.reason += "; " + std::to_string(planned) + " best-effort pages of " +
              std::to_string(pids.size()) + " process(es) planned off stack " +
              std::to_string(p.fromStack);
}

void Engine::run(const std::atomic<bool>& stop) {
  std::int64_t next = monotonicNs();
  while (!stop.load()) {
    tick(next);
    next += options_.intervalNs;
    const std::int64_t now = monotonicNs();
    if (next < now) next = now;  // fell behind: do not burst
    timespec ts{static_cast<time_t>(next / 1'000'000'000), static_cast<long>(next % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR && !stop.load()) {
    }
  }
}

}  // namespace pimcloud
