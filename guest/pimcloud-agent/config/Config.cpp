#include "config/Config.h"

#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace pimcloud {

using nlohmann::json;

namespace {

class Checker {
 public:
  explicit Checker(std::string source) : source_(std::move(source)) {}

  void error(const std::string& field, const std::string& message) {
    errors.push_back(source_ + ": field \"" + field + "\": " + message);
  }

  // Reports keys not in `known`.
  void onlyKnown(const json& obj, const std::string& where, const std::set<std::string>& known) {
    for (const auto& [key, value] : obj.items()) {
      if (known.count(key) != 0) continue;
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      error(where.empty() ? key : where + "." + key,
            "unknown field; remove it or use one of: " + list);
    }
  }

  template <typename T>
  bool number(const json& obj, const std::string& key, const std::string& field, T& out, double min,
              double max) {
    if (!obj.contains(key)) return false;
    const json& v = obj[key];
    if (!v.is_number()) {
      error(field, "is " + v.dump() + ", expected a number between " + fmt(min) + " and " + fmt(max));
      return false;
    }
    const double d = v.get<double>();
    if (d < min || d > max) {
      error(field, "is " + v.dump() + ", out of range; use a number between " + fmt(min) + " and " +
                       fmt(max));
      return false;
    }
    out = static_cast<T>(d);
    return true;
  }

  bool string(const json& obj, const std::string& key, const std::string& field, std::string& out) {
    if (!obj.contains(key)) return false;
    if (!obj[key].is_string()) {
      error(field, "is " + obj[key].dump() + ", expected a string");
      return false;
    }
    out = obj[key].get<std::string>();
    return true;
  }

  // A string naming one value of an enum (parse gives nullopt for an unknown name); the
  // error lists the names (`choices`).
  template <typename T, typename Parse>
  bool named(const json& obj, const std::string& key, const std::string& field, Parse parse,
             const std::string& choices, T& out) {
    std::string name;
    if (!string(obj, key, field, name)) return false;
    const std::optional<T> value = parse(name);
    if (!value) {
      error(field, "is \"" + name + "\"; use " + choices);
      return false;
    }
    out = *value;
    return true;
  }

  bool boolean(const json& obj, const std::string& key, const std::string& field, bool& out) {
    if (!obj.contains(key)) return false;
    if (!obj[key].is_boolean()) {
      error(field, "is " + obj[key].dump() + ", expected true or false");
      return false;
    }
    out = obj[key].get<bool>();
    return true;
  }

  bool cpuList(const json& v, const std::string& field, std::vector<int>& out) {
    if (!v.is_array()) {
      error(field, "is " + v.dump() + ", expected a list of CPU numbers like [4, 5, 6]");
      return false;
    }
    for (const json& c : v) {
      if (!c.is_number_integer() || c.get<int>() < 0) {
        error(field, "has " + c.dump() + "; CPU numbers are integers >= 0");
        return false;
      }
      out.push_back(c.get<int>());
    }
    return true;
  }

  static std::string fmt(double d) {
    std::ostringstream s;
    s << d;
    return s.str();
  }

  std::vector<std::string> errors;

 private:
  std::string source_;
};

}  // namespace

Topology topologyFrom(const TopologyConfig& config) {
  Topology t;
  t.firstStackNode = config.firstStack;
  t.stacks = static_cast<int>(config.stackCpus.size());
  t.stackBytes.assign(static_cast<std::size_t>(t.stacks) + 1, config.stackBytes);
  t.stackBytes[0] = 0;
  int id = 0;
  for (int cpu : config.hostCpus) t.cores.push_back({id++, cpu, CoreType::Host, 0});
  for (int s = 1; s <= t.stacks; ++s) {
    for (int cpu : config.stackCpus[static_cast<std::size_t>(s - 1)]) {
      t.cores.push_back({id++, cpu, CoreType::Pim, s});
    }
  }
  return t;
}

ConfigResult parseConfig(const std::string& text, const std::string& source) {
  ConfigResult result;
  Checker c(source);
  json j = json::parse(text, nullptr, false, true /* allow comments */);
  if (j.is_discarded()) {
    // Parse again with exceptions to get the position.
    try {
      const json again = json::parse(text, nullptr, true, true);
      (void)again;
    } catch (const json::parse_error& e) {
      result.errors.push_back(source + ": not valid JSON (" + e.what() +
                              "); fix the syntax at that byte");
    }
    return result;
  }
  if (!j.is_object()) {
    result.errors.push_back(source + ": the config must be a JSON object {...}");
    return result;
  }
  AgentConfig cfg;
  c.onlyKnown(j, "",
              {"policy", "options", "interval_ms", "profile_ms", "topology", "slack", "stability",
               "placement", "apps", "be", "cgroup", "latency", "control", "log", "summary",
               "placed",
               "sysfs_root", "proc_root", "hotness_scan_intervals", "hotness",
               "hotness_shadow", "latency_cache_ns"});

  if (c.string(j, "policy", "policy", cfg.policy)) {
    const auto names = PolicyRegistry::names();
    if (names.count(cfg.policy) == 0) {
      std::string list;
      for (const auto& [n, s] : names) list += (list.empty() ? "" : ", ") + n;
      c.error("policy", "\"" + cfg.policy + "\" is not a policy; use one of: " + list);
    } else {
      // The policy reads its own options (`pimcloud-agent policies --json` lists them).
      const json options = j.contains("options") ? j["options"] : json::object();
      for (const std::string& e : PolicyRegistry::parseOptions(cfg.policy, options, cfg.params)) {
        c.errors.push_back(source + ": " + e);
      }
    }
  }
  double ms = 100;
  if (c.number(j, "interval_ms", "interval_ms", ms, 1, 60000)) {
    cfg.engine.intervalNs = static_cast<std::int64_t>(ms * 1e6);
  }
  ms = 500;
  if (c.number(j, "profile_ms", "profile_ms", ms, 1, 60000)) {
    cfg.engine.profileNs = static_cast<std::int64_t>(ms * 1e6);
  }
  c.number(j, "hotness_scan_intervals", "hotness_scan_intervals", cfg.engine.hotnessScanIntervals, 1,
           1e6);
  if (c.string(j, "hotness", "hotness", cfg.hotness) && cfg.hotness != "idle" &&
      cfg.hotness != "hw") {
    c.error("hotness", "\"" + cfg.hotness + "\" is not a hotness source; use \"idle\" (idle "
            "page tracking) or \"hw\" (the hardware page-access counters, guest/driver)");
  }
  c.boolean(j, "hotness_shadow", "hotness_shadow", cfg.hotnessShadow);
  c.number(j, "latency_cache_ns", "latency_cache_ns", cfg.engine.latencyCacheNs, 0, 1e6);
  c.string(j, "sysfs_root", "sysfs_root", cfg.sysfsRoot);
  c.string(j, "proc_root", "proc_root", cfg.procRoot);
  c.string(j, "latency", "latency", cfg.latencyPath);
  c.string(j, "control", "control", cfg.controlPath);
  c.string(j, "log", "log", cfg.logPath);
  c.string(j, "summary", "summary", cfg.summaryPath);
  c.string(j, "placed", "placed", cfg.engine.placedPath);

  if (j.contains("topology")) {
    const json& t = j["topology"];
    if (t.is_string() && t.get<std::string>() == "sysfs") {
      cfg.topology.fromSysfs = true;
    } else if (t.is_object()) {
      cfg.topology.fromSysfs = false;
      c.onlyKnown(t, "topology", {"host_cpus", "stacks", "stack_bytes"});
      if (!t.contains("host_cpus") || !t.contains("stacks")) {
        c.error("topology", "needs \"host_cpus\" and \"stacks\" (or write \"sysfs\" to discover it)");
      } else {
        c.cpuList(t["host_cpus"], "topology.host_cpus", cfg.topology.hostCpus);
        if (!t["stacks"].is_array() || t["stacks"].empty()) {
          c.error("topology.stacks", "expected a non-empty list of CPU lists, one per stack");
        } else {
          for (std::size_t i = 0; i < t["stacks"].size(); ++i) {
            std::vector<int> cpus;
            c.cpuList(t["stacks"][i], "topology.stacks[" + std::to_string(i) + "]", cpus);
            cfg.topology.stackCpus.push_back(cpus);
          }
        }
        c.number(t, "stack_bytes", "topology.stack_bytes", cfg.topology.stackBytes, 1, 1e15);
        std::set<int> seen;
        std::vector<int> all = cfg.topology.hostCpus;
        for (const auto& s : cfg.topology.stackCpus) all.insert(all.end(), s.begin(), s.end());
        for (int cpu : all) {
          if (!seen.insert(cpu).second) {
            c.error("topology", "CPU " + std::to_string(cpu) + " is listed twice; list each CPU once");
          }
        }
      }
    } else {
      c.error("topology", "is " + t.dump() + "; use \"sysfs\" or {\"host_cpus\": [...], \"stacks\": [[...], ...]}");
    }
  }

  if (j.contains("slack")) {
    const json& s = j["slack"];
    if (!s.is_object()) {
      c.error("slack", "expected an object like {\"intervals\": 5, \"min_intervals\": 3}");
    } else {
      c.onlyKnown(s, "slack", {"intervals", "min_intervals"});
      c.number(s, "intervals", "slack.intervals", cfg.params.slackIntervals, 1, 100);
      c.number(s, "min_intervals", "slack.min_intervals", cfg.params.minSamples, 1, 100);
      if (cfg.params.minSamples > cfg.params.slackIntervals) {
        c.error("slack.min_intervals", "is larger than slack.intervals; make it at most " +
                                           std::to_string(cfg.params.slackIntervals));
      }
    }
  }
  if (j.contains("stability")) {
    const json& s = j["stability"];
    if (!s.is_object()) {
      c.error("stability", "expected an object");
    } else {
      c.onlyKnown(s, "stability", {"tolerance", "cores_intervals", "pages_intervals"});
      c.number(s, "tolerance", "stability.tolerance", cfg.params.stableTolerance, 0, 10);
      auto range = [&](const char* key, int& lo, int& hi) {
        if (!s.contains(key)) return;
        const json& r = s[key];
        const std::string field = std::string("stability.") + key;
        if (!r.is_array() || r.size() != 2 || !r[0].is_number_integer() ||
            !r[1].is_number_integer() || r[0].get<int>() < 1 || r[0].get<int>() > r[1].get<int>()) {
          c.error(field, "is " + r.dump() + "; expected [min, max] intervals with 1 <= min <= max");
          return;
        }
        lo = r[0].get<int>();
        hi = r[1].get<int>();
      };
      range("cores_intervals", cfg.params.minWaitCores, cfg.params.maxWaitCores);
      range("pages_intervals", cfg.params.minWaitPages, cfg.params.maxWaitPages);
    }
  }
  if (j.contains("placement")) {
    const json& p = j["placement"];
    c.onlyKnown(p, "placement", {"static", "reserve_mib", "page_bytes", "migration_budget_ms",
                                 "migration_chunk_pages", "tiering_pages", "tiering",
                                 "slow_node", "locality_pages", "replicate", "first_stack"});
    if (p.contains("first_stack")) {
      const json& f = p["first_stack"];
      if (!f.is_number_integer() || (f != 0 && f != 1)) {
        c.error("placement.first_stack",
                "is " + f.dump() + "; use 1 (host cores on node 0, stack 1 on node 1) or 0 "
                "(a PIM-only system such as arch9: stack 1 on node 0)");
      } else if (f.get<int>() == 0 && !cfg.topology.fromSysfs && !cfg.topology.hostCpus.empty()) {
        // Node 0 cannot be both the host's and the first stack's.
        c.error("placement.first_stack",
                "is 0 but topology.host_cpus names host CPUs; make host_cpus empty or "
                "first_stack 1");
      } else {
        cfg.topology.firstStack = f.get<int>();
      }
    }
    c.number(p, "locality_pages", "placement.locality_pages", cfg.engine.localityPages, 0, 1e7);
    c.boolean(p, "replicate", "placement.replicate", cfg.engine.replicateShared);
    c.number(p, "tiering_pages", "placement.tiering_pages", cfg.engine.tieringPages, 0, 1e7);
    c.number(p, "slow_node", "placement.slow_node", cfg.engine.slowNode, 0, 1023);
    c.named(p, "tiering", "placement.tiering", parseTieringMode,
            "\"promote\", \"heteroos-lru\" or \"heteroos-coordinated\"", cfg.engine.tiering);
    double budgetMs = 20;
    if (c.number(p, "migration_budget_ms", "placement.migration_budget_ms", budgetMs, 0.1, 60000)) {
      cfg.engine.migrationBudgetNs = static_cast<std::int64_t>(budgetMs * 1e6);
    }
    c.number(p, "migration_chunk_pages", "placement.migration_chunk_pages",
             cfg.engine.migrationChunkPages, 1, 1e6);
    if (c.named(p, "static", "placement.static", parseStaticPlacement,
                "\"ft\", \"cc\", \"il\", \"fast-preferred\", \"fast-always\", "
                "\"slow-preferred\" or \"slow-always\"",
                cfg.staticPlacement)) {
      cfg.engine.staticPlacement = cfg.staticPlacement;
      // On a PIM-only system node 0 is stack 1, not a slow tier to place or demote into.
      if (isTiered(cfg.staticPlacement) && cfg.topology.firstStack == 0 &&
          cfg.engine.slowNode == kHostSlowNode) {
        c.error("placement.static",
                std::string("is \"") + toString(cfg.staticPlacement) +
                    "\" with first_stack 0, where node 0 is stack 1, not a slow tier; set "
                    "placement.slow_node to a far-memory node after the stacks, or use "
                    "ft, cc or il");
      }
    }
    double mib = 64;
    if (c.number(p, "reserve_mib", "placement.reserve_mib", mib, 0, 1e7)) {
      cfg.engine.reserveBytes = static_cast<std::uint64_t>(mib * 1024 * 1024);
    }
    c.number(p, "page_bytes", "placement.page_bytes", cfg.engine.pageBytes, 4096, 1 << 30);
  }
  if (j.contains("be")) {
    const json& b = j["be"];
    c.onlyKnown(b, "be", {"cpu_max_fraction"});
    c.number(b, "cpu_max_fraction", "be.cpu_max_fraction", cfg.engine.beQuota, 0, 1e4);
  }
  if (j.contains("cgroup")) {
    const json& g = j["cgroup"];
    c.onlyKnown(g, "cgroup", {"root", "mode"});
    c.string(g, "root", "cgroup.root", cfg.cgroupRoot);
    std::string mode;
    if (c.string(g, "mode", "cgroup.mode", mode)) {
      if (mode == "cpuset") {
        cfg.useCgroups = true;
      } else if (mode == "affinity") {
        cfg.useCgroups = false;
      } else {
        c.error("cgroup.mode", "is \"" + mode + "\"; use \"cpuset\" or \"affinity\"");
      }
    }
  }
  if (j.contains("apps")) {
    const json& apps = j["apps"];
    if (!apps.is_array()) {
      c.error("apps", "expected a list of {\"name\", \"qos_ms\", ...} objects");
    } else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < apps.size(); ++i) {
        const json& a = apps[i];
        const std::string f = "apps[" + std::to_string(i) + "]";
        if (!a.is_object()) {
          c.error(f, "expected an object");
          continue;
        }
        c.onlyKnown(a, f, {"name", "qos_ms", "max_rps_host", "max_rps_pim", "threads", "pid",
                         "control_socket", "arrives"});
        AppConfig app;
        if (!c.string(a, "name", f + ".name", app.spec.name) || app.spec.name.empty()) {
          c.error(f + ".name", "missing; give every app a unique name as the harness reports it");
        } else if (!names.insert(app.spec.name).second) {
          c.error(f + ".name", "\"" + app.spec.name + "\" appears twice; names must be unique");
        }
        double qosMs = 0;
        if (!c.number(a, "qos_ms", f + ".qos_ms", qosMs, 1e-6, 1e6)) {
          if (!a.contains("qos_ms")) c.error(f + ".qos_ms", "missing; give the p99 target in ms");
        }
        app.spec.qosNs = qosMs * 1e6;
        c.number(a, "max_rps_host", f + ".max_rps_host", app.spec.maxRpsHost, 0, 1e12);
        c.number(a, "max_rps_pim", f + ".max_rps_pim", app.spec.maxRpsPim, 0, 1e12);
        if ((app.spec.maxRpsHost > 0) != (app.spec.maxRpsPim > 0)) {
          c.error(f, "give both max_rps_host and max_rps_pim, or neither (the agent then profiles)");
        }
        c.number(a, "threads", f + ".threads", app.spec.threads, 0, 1e6);
        c.number(a, "pid", f + ".pid", app.pid, 0, 1e9);
        c.string(a, "control_socket", f + ".control_socket", app.controlSocket);
        c.boolean(a, "arrives", f + ".arrives", app.arrives);
        cfg.apps.push_back(app);
      }
    }
  }
  if (c.errors.empty()) result.config = cfg;
  result.errors = c.errors;
  return result;
}

ConfigResult loadConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    ConfigResult r;
    r.errors.push_back(path + ": cannot read the config file; check the path");
    return r;
  }
  std::stringstream s;
  s << in.rdbuf();
  return parseConfig(s.str(), path);
}

}  // namespace pimcloud
