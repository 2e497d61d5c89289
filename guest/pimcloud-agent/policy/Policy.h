// The one small interface every resource-management policy implements, and the registry
// the policies add themselves to. The engine drives a Policy and knows nothing else of it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "policy/Topology.h"
#include "policy/Types.h"

namespace pimcloud {

// Seed 003's interference controller (policy/Interference.h).
struct InterferenceParams {
  std::string signal = "latency";  // "latency" (seed 003), "p99" or "none"
  int learnIntervals = 10;         // estimates averaged into an app's threshold (T)
  double stepCores = 0.5;          // quota added per quiet interval
  double floorCores = 1.0;         // quota after a violation, and at the start
  double thresholdMargin = 0.0;    // threshold = mean x (1 + margin); the paper: 0
  int lcCores = 0;                 // host cores per LC app (0: split the host cores)
};

// BALM (seed 001; policy/Balm.h) and its baselines.
struct BalmParams {
  std::string mode = "balm";   // "balm", "mba" (throttle only), "pgm" (migration only),
                               // "unshared" (the BE jobs' memory kept off the LC stack)
  int maxLevel = 9;            // the throttle's most restrictive level (pim_counters_abi.h)
  double stepFraction = 0.25;  // of the BE pages on the LC stack, moved per increment
  int lcCores = 0;             // host cores per LC app (0: the host cores split evenly)
};

// Tunables; defaults follow the paper (IV-D, IV-E).
struct PolicyParams {
  std::size_t slackIntervals = 5;   // median p99 over this many 100 ms intervals
  std::size_t minSamples = 3;       // intervals in the window before a new decision
  double stableTolerance = 0.05;    // relative change of mean latency called "stable"
  int minWaitCores = 2;             // core reassignment settles in 2-3 intervals
  int maxWaitCores = 3;
  int minWaitPages = 3;             // page manipulation settles in 3-8 intervals
  int maxWaitPages = 8;
  bool eagerReclaim = true;         // upsize may take cores from lower-R apps
  // AMS-like: apps with R >= this prefer host cores; the BE pool's preferred type.
  double amsHostMinR = 1.0;
  CoreType amsBeType = CoreType::Pim;
  // Octopus-Man-like: the app order to serve (names; empty = arrival order) and the
  // slack above which an app steps down its core ladder.
  std::vector<std::string> octopusOrder;
  double octopusDownsizeSlack = 0.3;
  InterferenceParams interference;
  BalmParams balm;
};

struct PolicyContext {
  const Topology* topology = nullptr;
  PolicyParams params;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;

  // Apps present at start-up (initial allocation).
  virtual void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
                     std::vector<Decision>& out) = 0;
  // Application churn.
  virtual void arrive(AppId app, const AppSpec& spec, const Observation& now,
                      std::vector<Decision>& out) = 0;
  virtual void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) = 0;
  // One monitoring interval.
  virtual void step(const Observation& now, std::vector<Decision>& out) = 0;

  virtual Assignment assignment() const = 0;
  // Candidate allocations examined so far (for the allocation-search benchmark).
  virtual std::uint64_t allocationsExplored() const { return 0; }
};

using PolicyFactory = std::function<std::unique_ptr<Policy>(const PolicyContext&)>;

// One option a policy reads from the config's "options" object (as oomd's plugins read
// their own arguments): listed by `pimcloud-agent policies --json` for campaigns.
struct PolicyOption {
  std::string key;
  std::string type;      // "number", "boolean", "string", "list of strings"
  std::string fallback;  // the value when the config leaves it out, as JSON
  std::string help;
};
// Reads a policy's "options" into the parameters; each error names "options.<key>", the
// value and the fix. Unknown keys are errors.
using OptionsParser =
    std::function<std::vector<std::string>(const nlohmann::json& options, PolicyParams& params)>;

// Typed reads of a policy's options; each error names "options.<key>", the value and
// the fix. For the policies' own OptionsParsers.
class OptionReader {
 public:
  explicit OptionReader(const nlohmann::json& options) : options_(options) {}
  void number(const char* key, double& out, double min, double max);
  void whole(const char* key, int& out, int min, int max);
  void boolean(const char* key, bool& out);
  void choice(const char* key, std::string& out, const std::vector<std::string>& allowed);
  void strings(const char* key, std::vector<std::string>& out);
  std::vector<std::string> errors;

 private:
  const nlohmann::json& options_;
};

struct PolicyInfo {
  std::string summary;
  std::vector<PolicyOption> options;
  OptionsParser parse;  // empty: the policy takes no options
};

class PolicyRegistry {
 public:
  static bool add(const std::string& name, const std::string& summary, PolicyFactory factory,
                  std::vector<PolicyOption> options = {}, OptionsParser parse = {});
  // nullptr if the name is unknown.
  static std::unique_ptr<Policy> create(const std::string& name, const PolicyContext& context);
  static std::map<std::string, std::string> names();  // name -> summary
  // Errors of a policy's options (a policy without options accepts only {}).
  static std::vector<std::string> parseOptions(const std::string& name,
                                               const nlohmann::json& options,
                                               PolicyParams& params);
  // The policies with their options as JSON: {"policies": [{"name", "summary",
  // "options": [{"key", "type", "default", "help"}]}]}.
  static nlohmann::json describe();
};

}  // namespace pimcloud

#define PIMCLOUD_CONCAT_INNER(a, b) a##b
#define PIMCLOUD_CONCAT(a, b) PIMCLOUD_CONCAT_INNER(a, b)
// Registers a policy plugin at static-initialisation time.
#define PIMCLOUD_REGISTER_POLICY(name, summary, ...)                                   \
  static const bool PIMCLOUD_CONCAT(pimcloudPolicyRegistered_, __LINE__) [[maybe_unused]] = \
      ::pimcloud::PolicyRegistry::add(name, summary, __VA_ARGS__)
