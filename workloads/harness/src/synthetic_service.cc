#include "pimcloud/harness/synthetic_service.h"

#include <stdexcept>
#include <string>

#include "pimcloud/harness/clock.h"

namespace pimcloud::harness {

std::uint64_t SyntheticService::work(std::uint64_t iterations) {
  std::uint64_t h = 0x9E3779B97F4A7C15ULL;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    h ^= i;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
  }
  return h;
}

SyntheticService::SyntheticService(const ServiceArgs& args) {
  const double work_us = static_cast<double>(args.option_int("work_us", 50));
  const std::string dist = args.option("dist", "exp");
  if (dist != "exp" && dist != "fixed") {
    throw std::invalid_argument("--opt dist=" + dist + ": use dist=exp or dist=fixed");
  }
  exponential_ = dist == "exp";
  // Calibrate iterations per microsecond on this machine once.
  const std::uint64_t probe = 2'000'000;
  const std::uint64_t t0 = now_ns();
  volatile std::uint64_t sink = work(probe);
  (void)sink;
  const double ns = static_cast<double>(now_ns() - t0);
  const double per_us = 1000.0 * static_cast<double>(probe) / (ns > 0 ? ns : 1.0);
  mean_iterations_ = work_us * per_us;
  const long long make_us = args.option_int("make_us", 0);
  if (make_us < 0) {
    throw std::invalid_argument("--opt make_us=" + std::to_string(make_us) +
                                ": the generator's CPU a request cannot be negative");
  }
  make_iterations_ = static_cast<std::uint64_t>(static_cast<double>(make_us) * per_us);
}

Request SyntheticService::make_request(Rng& rng) {
  if (make_iterations_ > 0) {
    volatile std::uint64_t sink = work(make_iterations_);
    (void)sink;
  }
  double n = mean_iterations_;
  if (exponential_) n = std::exponential_distribution<double>(1.0 / mean_iterations_)(rng);
  return {std::to_string(static_cast<std::uint64_t>(n))};
}

Response SyntheticService::serve(const Request& request, int /*worker*/) {
  const std::uint64_t n = std::stoull(request.body);
  return {std::to_string(work(n))};
}

bool SyntheticService::check(const Request& request, const Response& response) {
  return response.body == std::to_string(work(std::stoull(request.body)));
}

std::unique_ptr<Service> make_synthetic_service(const ServiceArgs& args) {
  return std::make_unique<SyntheticService>(args);
}

}  // namespace pimcloud::harness
