#include "pimcloud/harness/early_stop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace pimcloud::harness {
namespace {

// The standard normal quantile of `p` (0.5 < p < 1), by bisection on erfc.
double normal_quantile(double p) {
  double lo = 0, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}

double wilson(std::uint64_t k, std::uint64_t n, double z, double sign) {
  if (n == 0) return sign < 0 ? 0.0 : 1.0;
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(k) / nn;
  const double denominator = 1 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denominator;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denominator;
  return std::clamp(centre + sign * half, 0.0, 1.0);
}

}  // namespace

double wilson_lower(std::uint64_t k, std::uint64_t n, double confidence) {
  return wilson(k, n, normal_quantile(confidence), -1);
}

double wilson_upper(std::uint64_t k, std::uint64_t n, double confidence) {
  return wilson(k, n, normal_quantile(confidence), +1);
}

EarlyStop::EarlyStop(EarlyStopRule rule, std::size_t expected_arrivals) : rule_(rule) {
  if (!rule_.enabled()) return;
  if (rule_.confidence <= 0.5 || rule_.confidence >= 1) {
    throw std::invalid_argument("--early-stop-confidence must be between 0.5 and 1");
  }
  z_ = normal_quantile(rule_.confidence);
  scheduled_.assign(expected_arrivals, 0);  // allocated and touched now
  // Run the verdict's arithmetic once so that its first real use finds it warm.
  volatile double warm = wilson(1, 100, z_, -1) + wilson(1, 100, z_, +1);
  (void)warm;
}

void EarlyStop::arrival(std::uint64_t scheduled_ns) {
  if (!enabled()) return;
  if (arrivals_ < scheduled_.size()) scheduled_[arrivals_] = scheduled_ns;
  else scheduled_.push_back(scheduled_ns);
  ++arrivals_;
}

void EarlyStop::answered(std::uint64_t sojourn_ns) {
  if (!enabled()) return;
  answered_.fetch_add(1, std::memory_order_relaxed);
  if (static_cast<double>(sojourn_ns) > rule_.qos_ns) {
    late_.fetch_add(1, std::memory_order_relaxed);
  }
}

void EarlyStop::checked(std::uint64_t ns) {
  ++checks_;
  check_ns_total_ += ns;
  check_ns_max_ = std::max(check_ns_max_, ns);
}

EarlyVerdict EarlyStop::check(std::uint64_t now_ns) {
  if (!enabled() || verdict_ != EarlyVerdict::kUndecided) return verdict_;
  const auto qos = static_cast<std::uint64_t>(rule_.qos_ns);
  while (overdue_ < arrivals_ && scheduled_[overdue_] + qos < now_ns) ++overdue_;
  const std::uint64_t answered = answered_.load(std::memory_order_relaxed);
  const std::uint64_t late = late_.load(std::memory_order_relaxed);
  // Overdue arrivals not answered yet (a lower bound: some answers are of later arrivals).
  const std::uint64_t waiting_late = overdue_ > answered ? overdue_ - answered : 0;
  const std::uint64_t n = answered + waiting_late, k = late + waiting_late;
  if (static_cast<long long>(n) < rule_.min_requests) return verdict_;
  return decide(n, k);
}

EarlyVerdict EarlyStop::decide(std::uint64_t n, std::uint64_t k) {
  const double limit = 1 - rule_.quantile;
  const double lower = wilson(k, n, z_, -1);
  if (lower > limit) {
    verdict_ = EarlyVerdict::kMiss;
    bound_ = lower;
  } else if (rule_.stop_on_meet) {
    const double upper = wilson(k, n, z_, +1);
    if (upper < limit) {
      verdict_ = EarlyVerdict::kMeet;
      bound_ = upper;
    }
  }
  if (verdict_ != EarlyVerdict::kUndecided) {
    decided_ = n;
    late_at_verdict_ = k;
  }
  return verdict_;
}

std::string EarlyStop::json(std::uint64_t discarded) const {
  const char* verdict = verdict_ == EarlyVerdict::kMiss   ? "miss"
                        : verdict_ == EarlyVerdict::kMeet ? "meet"
                                                          : "undecided";
  char text[384];
  std::snprintf(text, sizeof text,
                "{\"verdict\":\"%s\",\"decided\":%llu,\"late\":%llu,\"bound\":%.6f,"
                "\"confidence\":%.6g,\"qos_ns\":%.0f,\"discarded\":%llu,\"checks\":%llu,"
                "\"check_ns_max\":%llu,\"check_ns_total\":%llu}",
                verdict, static_cast<unsigned long long>(decided_),
                static_cast<unsigned long long>(late_at_verdict_), bound_, rule_.confidence,
                rule_.qos_ns, static_cast<unsigned long long>(discarded),
                static_cast<unsigned long long>(checks_),
                static_cast<unsigned long long>(check_ns_max_),
                static_cast<unsigned long long>(check_ns_total_));
  return text;
}

}  // namespace pimcloud::harness
