// A service with no engine: each request asks for a given amount of CPU work. It lets
// the harness be tested and calibrated without any data set.
#pragma once

#include "pimcloud/harness/service.h"

namespace pimcloud::harness {

// Options: work_us (mean service demand, default 50), dist = fixed|exp (default exp),
// make_us (the load generator's CPU to make one request, default 0; a positive one makes
// the generator costly, so that it falls behind its schedule).
// A request is "<n>": spin over n iterations of a small hash, answer the hash in hex.
class SyntheticService final : public Service {
 public:
  explicit SyntheticService(const ServiceArgs& args);
  Request make_request(Rng& rng) override;
  Response serve(const Request& request, int worker) override;
  bool check(const Request& request, const Response& response) override;
  static std::uint64_t work(std::uint64_t iterations);

 private:
  double mean_iterations_;
  std::uint64_t make_iterations_ = 0;
  bool exponential_;
};

std::unique_ptr<Service> make_synthetic_service(const ServiceArgs& args);

}  // namespace pimcloud::harness
