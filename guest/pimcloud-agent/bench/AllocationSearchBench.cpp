// Allocations explored per decision, and decision CPU time per 100 ms interval, for
// 2, 3 and 6 LC apps on the paper's 4 host + 2x8 PIM system, over seeded random load
// traces driven through the engine and the fake machine. Prints figures; asserts nothing.
//
//   pimcloud_agent_bench [seeds] [intervals]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "engine/TestDriver.h"

using namespace pimcloud;

namespace {

double binom(int n, int k) {
  double r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

// Allocations (c_i, p_i) with sum c <= C, sum p <= P that satisfy the PIMCloud rule.
std::uint64_t ruleSpace(int n, int hostLeft, int pimLeft, bool earlierHasPim) {
  if (n == 0) return 1;
  std::uint64_t total = 0;
  for (int c = 0; c <= hostLeft; ++c) {
    if (earlierHasPim && c > 0) break;
    for (int p = 0; p <= pimLeft; ++p) {
      total += ruleSpace(n - 1, hostLeft - c, pimLeft - p, earlierHasPim || p > 0);
    }
  }
  return total;
}

double cpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Figures {
  std::vector<double> perDecision;
  std::vector<double> cpuPerInterval;
  std::uint64_t decisions = 0;
};

void run(const std::string& policy, int apps, unsigned seed, int intervals, Figures& f) {
  testing::Driver d(policy);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  const double r[6] = {8, 5, 3, 2, 0.5, 0.25};  // Tailbench-like R spread
  for (int i = 0; i < apps; ++i) {
    const int k = apps == 6 ? i : (apps == 3 ? i * 2 : i * 4);
    d.app("a" + std::to_string(i), 100 * r[k], 100, 200 + 600 * unit(rng), 1 + i % 2);
  }
  for (int t = 0; t < intervals; ++t) {
    if (unit(rng) < 0.05) {
      d.machine.setLoad("a" + std::to_string(rng() % static_cast<unsigned>(apps)),
                        100 + 1400 * unit(rng));
    }
    const std::uint64_t before = d.policy->allocationsExplored();
    const std::size_t logged = d.log.history().size();
    const double c0 = cpuNow();
    d.tick();
    f.cpuPerInterval.push_back(cpuNow() - c0);
    std::uint64_t decisions = 0;
    for (std::size_t i = logged; i < d.log.history().size(); ++i) {
      const std::string& e = d.log.history()[i].event;
      if (e == "upsize" || e == "downsize" || e == "downsize-revert" || e == "arrive" ||
          e == "initial" || e == "oversubscribed") {
        ++decisions;
      }
    }
    const std::uint64_t explored = d.policy->allocationsExplored() - before;
    if (decisions > 0) {
      f.decisions += decisions;
      f.perDecision.push_back(static_cast<double>(explored) / static_cast<double>(decisions));
    }
  }
}

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned seeds = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 50;
  const int intervals = argc > 2 ? std::atoi(argv[2]) : 600;
  const int C = 4, P = 16;
  std::printf("system: %d host + %d PIM cores (2 stacks); %u seeds x %d intervals of 100 ms\n", C,
              P, seeds, intervals);
  std::printf("%-12s %4s %12s %12s %12s | %9s %9s %9s %9s | %10s %10s\n", "policy", "apps",
              "full-space", "homogeneous", "rule-space", "decisions", "mean/dec", "p50/dec",
              "max/dec", "cpu_us/int", "max_us/int");
  for (const char* policy : {"pimcloud", "octopus-man"}) {
    for (int apps : {2, 3, 6}) {
      Figures f;
      for (unsigned s = 1; s <= seeds; ++s) run(policy, apps, s, intervals, f);
      std::printf("%-12s %4d %12.0f %12.0f %12llu | %9llu %9.2f %9.2f %9.2f | %10.1f %10.1f\n",
                  policy, apps, binom(C + apps, apps) * binom(P + apps, apps),
                  binom(C + P, apps), static_cast<unsigned long long>(ruleSpace(apps, C, P, false)),
                  static_cast<unsigned long long>(f.decisions), mean(f.perDecision),
                  pct(f.perDecision, 0.5), pct(f.perDecision, 1.0),
                  mean(f.cpuPerInterval) * 1e6, pct(f.cpuPerInterval, 1.0) * 1e6);
    }
  }
  return 0;
}
