#include "pimcloud/harness/arrivals.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace pimcloud::harness {

LoadSchedule LoadSchedule::constant(double rps) { return LoadSchedule({{0.0, rps}}); }

LoadSchedule::LoadSchedule(std::vector<RateStep> steps) : steps_(std::move(steps)) {
  if (steps_.empty()) throw std::invalid_argument("load schedule: no steps; give e.g. 0:100");
  std::stable_sort(steps_.begin(), steps_.end(),
                   [](const RateStep& a, const RateStep& b) { return a.start_s < b.start_s; });
  if (steps_.front().start_s != 0.0) {
    throw std::invalid_argument("load schedule: the first step must start at 0 s (e.g. 0:100)");
  }
  for (const auto& s : steps_) {
    if (!(s.rps >= 0.0) || !(s.start_s >= 0.0)) {
      throw std::invalid_argument("load schedule: times and rates must be >= 0, got " +
                                  std::to_string(s.start_s) + ":" + std::to_string(s.rps));
    }
  }
}

LoadSchedule LoadSchedule::parse(const std::string& text) {
  std::vector<RateStep> steps;
  std::stringstream all(text);
  std::string item;
  while (std::getline(all, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      throw std::invalid_argument("load schedule: step '" + item +
                                  "' is not SECONDS:RPS (e.g. 0:100,10:400)");
    }
    try {
      std::size_t used = 0;
      RateStep s{std::stod(item.substr(0, colon), &used), 0};
      if (used != colon) throw std::invalid_argument("time");
      const auto rest = item.substr(colon + 1);
      s.rps = std::stod(rest, &used);
      if (used != rest.size()) throw std::invalid_argument("rate");
      steps.push_back(s);
    } catch (const std::logic_error&) {
      throw std::invalid_argument("load schedule: step '" + item +
                                  "' is not SECONDS:RPS with numbers (e.g. 0:100,10:400)");
    }
  }
  return LoadSchedule(std::move(steps));
}

double LoadSchedule::rps_at(double t_s) const {
  double rps = steps_.front().rps;
  for (const auto& s : steps_) {
    if (s.start_s <= t_s) rps = s.rps;
  }
  return rps;
}

double LoadSchedule::expected_arrivals(double t_s) const {
  double total = 0;
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const double a = steps_[i].start_s;
    const double b = i + 1 < steps_.size() ? steps_[i + 1].start_s : t_s;
    if (a >= t_s) break;
    total += steps_[i].rps * (std::min(b, t_s) - a);
  }
  return total;
}

ArrivalProcess::ArrivalProcess(LoadSchedule schedule, std::uint64_t seed)
    : schedule_(std::move(schedule)), rng_(seed) {}

std::uint64_t ArrivalProcess::next() {
  const auto& steps = schedule_.steps();
  for (;;) {
    // Index of the step holding t_s_ and the start of the following one.
    std::size_t i = 0;
    while (i + 1 < steps.size() && steps[i + 1].start_s <= t_s_) ++i;
    const double end = i + 1 < steps.size() ? steps[i + 1].start_s
                                            : std::numeric_limits<double>::infinity();
    const double rps = steps[i].rps;
    if (rps <= 0.0) {
      if (end == std::numeric_limits<double>::infinity()) return UINT64_MAX;
      t_s_ = end;
      continue;
    }
    std::exponential_distribution<double> gap(rps);
    const double t = t_s_ + gap(rng_);
    if (t >= end) {
      t_s_ = end;
      continue;
    }
    t_s_ = t;
    return static_cast<std::uint64_t>(t * 1e9);
  }
}

}  // namespace pimcloud::harness
