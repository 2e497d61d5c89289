// pimcloud-agent: the guest resource manager.
//
//   pimcloud-agent run --config agent.json [--duration-s N]   manage until SIGINT/SIGTERM
//   pimcloud-agent check --config agent.json                  validate the config
//   pimcloud-agent policies [--json]                          the policy plugins (and options)
//   pimcloud-agent exec --placement cc|ft|il|fast-preferred|fast-always|slow-preferred|slow-always [--resident K] [--stacks M] [--first-stack F] [--slow-node N] -- CMD ARGS...
//                                        start CMD under a static placement (set_mempolicy)
//   pimcloud-agent numa-maps PID                              bytes per node, as JSON
#include <execinfo.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "backend/LinuxMachine.h"
#include "backend/ProcMaps.h"
#include "backend/Sysfs.h"
#include "config/Config.h"
#include "engine/DecisionLog.h"
#include "engine/Engine.h"
#include "engine/LatencySource.h"
#include "placement/Placement.h"

using namespace pimcloud;

namespace {

std::atomic<bool> gStop{false};
void onSignal(int) { gStop.store(true); }

// A crash leaves the stack that led to it in the agent's log (its frames read
// `pimcloud-agent(+0xOFFSET)`: `addr2line -fCe build/.../pimcloud-agent 0xOFFSET`).
void onCrash(int sig) {
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  static const char kSaid[] = "pimcloud-agent: fatal signal, its stack:\n";
  [[maybe_unused]] const ssize_t said = ::write(STDERR_FILENO, kSaid, sizeof kSaid - 1);
  ::backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  ::raise(sig);
}

void reportCrashes() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now, not inside the handler
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, onCrash);
}

int usage() {
  std::fprintf(stderr,
               "usage: pimcloud-agent run --config FILE [--duration-s N]\n"
               "       pimcloud-agent check --config FILE\n"
               "       pimcloud-agent policies [--json]\n"
               "       pimcloud-agent exec --placement cc|ft|il|fast-preferred|fast-always|slow-preferred|slow-always [--resident K] [--stacks M] [--first-stack F] [--slow-node N] -- CMD...\n"
               "       pimcloud-agent numa-maps PID\n");
  return 2;
}

std::string option(const std::vector<std::string>& args, const std::string& name,
                   const std::string& fallback = "") {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == name) return args[i + 1];
  }
  return fallback;
}

std::optional<AgentConfig> load(const std::string& path) {
  const ConfigResult r = loadConfig(path);
  for (const std::string& e : r.errors) std::fprintf(stderr, "%s\n", e.c_str());
  return r.config;
}

void makeParent(const std::string& path) {
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
}

int run(const std::vector<std::string>& args) {
  reportCrashes();  // before anything is logged: a crash in set-up is reported too
  const std::string path = option(args, "--config");
  if (path.empty()) return usage();
  auto cfg = load(path);
  if (!cfg) return 2;
  const double duration = std::atof(option(args, "--duration-s", "0").c_str());

  Topology topology;
  if (cfg->topology.fromSysfs) {
    std::string error;
    const auto nodes = readNodes(cfg->sysfsRoot, error);
    const auto t = error.empty() ? topologyFromNodes(nodes, error, cfg->engine.slowNode,
                                                     cfg->topology.firstStack)
                                 : std::nullopt;
    if (!t) {
      std::fprintf(stderr, "%s: topology: %s\n", path.c_str(), error.c_str());
      return 2;
    }
    topology = *t;
  } else {
    topology = topologyFrom(cfg->topology);
  }

  for (const std::string* p : {&cfg->logPath, &cfg->summaryPath, &cfg->controlPath}) makeParent(*p);
  if (!cfg->engine.placedPath.empty()) makeParent(cfg->engine.placedPath);
  DecisionLog log(cfg->logPath);
  if (!log.ok()) {
    std::fprintf(stderr, "%s: cannot open the decision log %s: %s\n", path.c_str(),
                 cfg->logPath.c_str(), std::strerror(errno));
    return 2;
  }
  LinuxMachineOptions mo;
  mo.sysfsRoot = cfg->sysfsRoot;
  mo.procRoot = cfg->procRoot;
  mo.cgroupRoot = cfg->cgroupRoot;
  mo.useCgroups = cfg->useCgroups;
  mo.pageBytes = cfg->engine.pageBytes;
  mo.hotness = cfg->hotness;
  mo.shadowHotness = cfg->hotnessShadow;
  auto machine = std::make_unique<LinuxMachine>(mo);
  if (!machine->hotnessNote().empty()) log.note(0, "backend-error", machine->hotnessNote());
  if (cfg->hotnessShadow && machine->shadowHotnessSource().empty()) {
    log.note(0, "backend-error", "hotness_shadow: the other hotness source is unavailable "
             "(idle tracking needs /sys/kernel/mm/page_idle/bitmap, hw the counters): no shadow");
  }
  if (const Status s = machine->prepare(); !s.ok) {
    // Keep managing: per-thread affinity needs no cgroup.
    log.note(0, "backend-error", "cgroups unavailable (" + s.error + "); using sched_setaffinity");
    mo.useCgroups = false;
    machine = std::make_unique<LinuxMachine>(mo);
  }
  PolicyContext ctx{&topology, cfg->params};
  auto policy = PolicyRegistry::create(cfg->policy, ctx);
  std::string sourceError;
  auto source = openLatencySource(cfg->latencyPath, sourceError);
  if (!sourceError.empty()) {
    std::fprintf(stderr, "%s: field \"latency\": %s\n", path.c_str(), sourceError.c_str());
    return 2;
  }
  FileHarnessControl control(cfg->controlPath);
  Engine engine(topology, *policy, *machine, *source, log, &control, cfg->engine);
  for (const AppConfig& a : cfg->apps) engine.addApp(a.spec, a.pid, a.controlSocket, a.arrives);
  log.note(0, "start",
           "policy " + cfg->policy + ", " + std::to_string(topology.hostCores()) + " host + " +
               std::to_string(topology.pimCores()) + " PIM cores on " +
               std::to_string(topology.stacks) + " stacks" +
               (topology.firstStackNode != 1
                    ? " (stack 1 on node " + std::to_string(topology.firstStackNode) + ")"
                    : "") +
               ", static placement " +
               toString(cfg->staticPlacement));

  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  // Under memory pressure the kernel reclaims file pages, the agent's own code among
  // them, and each interval would then wait on page faults: keep the agent resident.
  // MCL_ONFAULT: a new mapping is locked as it is touched, not read in whole at mmap
  // (HeteroOS-LRU maps the services' open files, then unlocks that mapping).
  if (::mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0) {
    log.note(0, "backend-error",
             std::string("mlockall: ") + std::strerror(errno) +
                 "; the agent may stall under memory pressure (run it as root)");
  }
  // The services and best-effort jobs may keep every CPU busy; the manager must still
  // run on time (a higher priority, as a system daemon; best effort without root).
  if (::setpriority(PRIO_PROCESS, 0, -10) != 0) {
    log.note(0, "backend-error", std::string("setpriority: ") + std::strerror(errno) +
                                     "; the agent's interval may slip on busy CPUs");
  }
  std::thread timer;
  if (duration > 0) {
    timer = std::thread([duration] {
      const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(duration);
      while (!gStop.load() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      gStop.store(true);
    });
  }
  engine.run(gStop);
  if (timer.joinable()) timer.join();
  std::string error;
  if (!log.writeSummary(cfg->summaryPath, policy->name(), error)) {
    std::fprintf(stderr, "summary: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

int exec(const std::vector<std::string>& args, char** argv, int argc) {
  int dashdash = -1;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      dashdash = i;
      break;
    }
  }
  if (dashdash < 0 || dashdash + 1 >= argc) return usage();
  const auto placement = parseStaticPlacement(option(args, "--placement", "cc"));
  if (!placement) {
    std::fprintf(stderr, "--placement: use cc, ft, il, fast-preferred, fast-always, "
                         "slow-preferred or slow-always\n");
    return 2;
  }
  const int resident = std::atoi(option(args, "--resident", "1").c_str());
  const int stacks = std::atoi(option(args, "--stacks", "2").c_str());
  const int slowNode = std::atoi(option(args, "--slow-node", "0").c_str());
  const int firstStack = std::atoi(option(args, "--first-stack", "1").c_str());
  const Status s =
      applyMemPolicy(memPolicyFor(*placement, resident, stacks, slowNode, firstStack));
  if (!s.ok) {
    std::fprintf(stderr, "pimcloud-agent exec: %s\n", s.error.c_str());
    return 1;
  }
  execvp(argv[dashdash + 1], argv + dashdash + 1);
  std::fprintf(stderr, "pimcloud-agent exec: %s: %s\n", argv[dashdash + 1], std::strerror(errno));
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string cmd = args[0];
  if (cmd == "run") return run(args);
  if (cmd == "check") {
    const std::string path = option(args, "--config");
    if (path.empty()) return usage();
    if (!load(path)) return 2;
    std::printf("%s: ok\n", path.c_str());
    return 0;
  }
  if (cmd == "policies") {
    if (args.size() == 2 && args[1] == "--json") {
      std::printf("%s\n", PolicyRegistry::describe().dump(1).c_str());
      return 0;
    }
    for (const auto& [name, summary] : PolicyRegistry::names()) {
      std::printf("%-20s %s\n", name.c_str(), summary.c_str());
    }
    return 0;
  }
  if (cmd == "exec") return exec(args, argv, argc);
  if (cmd == "numa-maps" && args.size() == 2) {
    std::string text;
    if (!readFile("/proc/" + args[1] + "/numa_maps", text)) {
      std::fprintf(stderr, "cannot read /proc/%s/numa_maps\n", args[1].c_str());
      return 1;
    }
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [node, bytes] : bytesPerNode(parseNumaMaps(text))) {
      j[std::to_string(node)] = bytes;
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  return usage();
}
