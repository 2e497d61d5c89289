// Early stop of a load point: the measured region ends as soon as it is certain that the
// p99 sojourn time misses the QoS target (or, when asked, that it meets it).
//
// The rule: a request is *late* when its sojourn time exceeds the QoS target. Late are the
// answered requests that took longer, and the requests still waiting whose scheduled
// arrival is more than the target ago (counted as a lower bound: overdue arrivals minus
// all answers). Out of n decided requests k are late; the p99 misses the target for
// certain when the one-sided Wilson lower bound of k/n at the given confidence is above
// 1 %, and meets it when the upper bound is below 1 %, once n >= min_requests. The bound
// treats requests as independent, which queued requests are not: use a high confidence.
//
// The check runs on the arrival generator's thread, so it must cost next to nothing and
// never stall: every late arrival it causes is a late request it then counts. So the
// quantile z is computed once, the Wilson arithmetic and the arrival list are exercised
// and touched before the measured region (in gem5 the first check's cold path, a libm
// symbol bound lazily, lined up with a ~200 us stall of the generator), and the check's
// own cost is measured and reported.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud::harness {

struct EarlyStopRule {
  double qos_ns = 0;           // 0: no early stop
  double confidence = 0.99;    // one-sided
  long long min_requests = 100;
  bool stop_on_meet = false;   // also stop when meeting QoS is certain
  double quantile = 0.99;
  bool enabled() const { return qos_ns > 0; }
};

enum class EarlyVerdict { kUndecided, kMiss, kMeet };

// The Wilson score bounds of a binomial proportion k/n, one-sided at `confidence`.
double wilson_lower(std::uint64_t k, std::uint64_t n, double confidence);
double wilson_upper(std::uint64_t k, std::uint64_t n, double confidence);

class EarlyStop {
 public:
  // `expected_arrivals`: how many measured arrivals to make room for now, not during the
  // measured region.
  explicit EarlyStop(EarlyStopRule rule, std::size_t expected_arrivals = 0);
  bool enabled() const { return rule_.enabled(); }
  // The generator thread: a measured request was scheduled at `scheduled_ns`.
  void arrival(std::uint64_t scheduled_ns);
  // Any worker: a measured request was answered after `sojourn_ns`.
  void answered(std::uint64_t sojourn_ns);
  // The generator thread: the verdict from what is certain at `now_ns` (sticky once given).
  EarlyVerdict check(std::uint64_t now_ns);
  EarlyVerdict verdict() const { return verdict_; }
  // The generator thread: one check took `ns` of its time.
  void checked(std::uint64_t ns);
  // {"verdict":..,"decided":n,"late":k,"bound":..,"confidence":..,"discarded":..,
  //  "checks":..,"check_ns_max":..,"check_ns_total":..}
  std::string json(std::uint64_t discarded) const;

 private:
  EarlyVerdict decide(std::uint64_t n, std::uint64_t k);

  EarlyStopRule rule_;
  double z_ = 0;  // the standard normal quantile of the confidence
  std::vector<std::uint64_t> scheduled_;
  std::size_t arrivals_ = 0, overdue_ = 0;
  std::atomic<std::uint64_t> answered_{0}, late_{0};
  EarlyVerdict verdict_ = EarlyVerdict::kUndecided;
  std::uint64_t decided_ = 0, late_at_verdict_ = 0;
  double bound_ = 0;
  std::uint64_t checks_ = 0, check_ns_max_ = 0, check_ns_total_ = 0;
};

}  // namespace pimcloud::harness
