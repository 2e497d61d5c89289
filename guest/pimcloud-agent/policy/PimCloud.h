// PIMCloud (paper section IV): preference ranking, the PIMCloud rule, initial grouping
// into M+1 groups, Downsize (Algorithm 1), Upsize (Algorithm 2), adjustCore(+1/-1),
// per-app downsize thresholds, the BE pool, application churn, and dynamic placement
// requests. Pure: no Linux calls; the engine applies assignment() and the placement
// requests it emits.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "policy/CoreMap.h"
#include "policy/Policy.h"
#include "policy/Slack.h"

namespace pimcloud {

class PimCloudPolicy : public Policy {
 public:
  // The paper's stacked bars (Fig. 7): preference only, + dynamic cores, + dynamic memory.
  enum class Variant { PreferenceOnly, DynamicCores, Full };

  PimCloudPolicy(const PolicyContext& context, Variant variant);

  std::string name() const override;
  void start(const std::map<AppId, AppSpec>& apps, const Observation& now,
             std::vector<Decision>& out) override;
  void arrive(AppId app, const AppSpec& spec, const Observation& now,
              std::vector<Decision>& out) override;
  void exit(AppId app, std::int64_t tNs, std::vector<Decision>& out) override;
  void step(const Observation& now, std::vector<Decision>& out) override;
  Assignment assignment() const override;
  std::uint64_t allocationsExplored() const override { return explored_; }

  // For tests and the benchmark.
  const CoreMap& cores() const { return cores_; }
  const std::vector<AppId>& ranking() const { return ranking_; }
  double threshold(AppId app) const { return apps_.at(app).threshold; }
  int residentStack(AppId app) const { return apps_.at(app).resident; }
  std::optional<double> slack(AppId app) const;
  int pimOnForTest(AppId app, int stack) const { return cores_.pimOn(app, stack); }
  bool steady(AppId app) const { return apps_.at(app).phase == Phase::Steady; }

 private:
  enum class Phase { Steady, AfterDownsize, AfterUpsize, AfterRevert, AfterDonate, AfterArrival };

  struct App {
    AppSpec spec;
    int resident = 1;
    double threshold = 0;  // downsize threshold: least slack the app can sustain
    SlackWindow window;
    Phase phase = Phase::Steady;
    int waited = 0;
    bool pagesInFlight = false;  // the last change moved pages: wait longer
    double goodSlack = 0;        // slack before the pending downsize
    int removedCore = -1;        // core the pending downsize gave away
    bool oversubscribed = false; // already signalled for the current violation
  };

  struct Move {
    int core = -1;
    AppId from = kBePool;
    AppId to = kBePool;
  };

  void rerank();
  int rankOf(AppId app) const;
  // adjustCore(A, +1): host first, then PIM on the resident stack, then remote PIM;
  // for each, the BE pool first, then lower-R apps by largest slack. nullopt if none.
  std::optional<Move> adjustCoreUp(AppId app, bool allowDonors);
  // adjustCore(A, -1): a host core, else a remote PIM core, else a local one.
  std::optional<Move> adjustCoreDown(AppId app);
  // Moves a core if the PIMCloud rule still holds afterwards; counts the candidate.
  bool tryMove(int core, AppId to);
  void placementFor(const Move& move, std::vector<PlacementRequest>& out) const;
  std::vector<int> pickOrder(AppId holder, CoreType type, int stack) const;
  std::vector<int> stackOrder(int resident) const;

  void upsizeStep(AppId app, double slack, std::int64_t tNs, std::vector<Decision>& out);
  void downsizeStep(AppId app, double slack, std::int64_t tNs, std::vector<Decision>& out);
  void settle(AppId app, std::int64_t tNs, std::vector<Decision>& out);
  void changed(AppId app, Phase phase, bool pages);
  Decision decision(std::int64_t tNs, const std::string& event, AppId app,
                    const std::vector<int>& fromCpus, std::optional<double> slack,
                    const std::string& reason) const;
  std::string describe(const Move& move) const;

  const Topology* topology_;
  PolicyParams params_;
  Variant variant_;
  CoreMap cores_;
  std::map<AppId, App> apps_;
  std::vector<AppId> ranking_;
  std::uint64_t explored_ = 0;
};

}  // namespace pimcloud
