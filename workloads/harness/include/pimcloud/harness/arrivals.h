// Open-loop Poisson arrivals at a target rate that may change in steps over time
// (diurnal load patterns). Arrival times are fixed in advance by the seed, never by how
// fast the server answers, so queueing cannot hide behind a slow load generator.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace pimcloud::harness {

struct RateStep {
  double start_s = 0;  // from the start of the run
  double rps = 0;      // requests per second from start_s on (0 = idle)
};

// A piecewise-constant rate, sorted by start time, first step at 0.
class LoadSchedule {
 public:
  static LoadSchedule constant(double rps);
  // "0:100,10:400,20:50" = 100 RPS from 0 s, 400 from 10 s, 50 from 20 s.
  // Throws std::invalid_argument naming the bad step and the expected form.
  static LoadSchedule parse(const std::string& text);

  explicit LoadSchedule(std::vector<RateStep> steps);
  const std::vector<RateStep>& steps() const { return steps_; }
  double rps_at(double t_s) const;
  // Expected number of arrivals in [0, t_s).
  double expected_arrivals(double t_s) const;

 private:
  std::vector<RateStep> steps_;
};

// Successive arrival offsets (ns from the start of the run) of a Poisson process whose
// rate follows the schedule. Exact for piecewise-constant rates: when a draw crosses a
// step boundary the process restarts at the boundary (the exponential is memoryless).
class ArrivalProcess {
 public:
  ArrivalProcess(LoadSchedule schedule, std::uint64_t seed);
  // The next arrival offset in ns, or UINT64_MAX if the rate stays 0 for ever.
  std::uint64_t next();

 private:
  LoadSchedule schedule_;
  std::mt19937_64 rng_;
  double t_s_ = 0;
};

}  // namespace pimcloud::harness
