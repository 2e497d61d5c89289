#include "pimcloud/harness/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using pimcloud::harness::ArrivalProcess;
using pimcloud::harness::LoadSchedule;

namespace {
std::vector<double> gaps_s(ArrivalProcess& p, int n) {
  std::vector<double> out;
  std::uint64_t last = 0;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t t = p.next();
    out.push_back(static_cast<double>(t - last) / 1e9);
    last = t;
  }
  return out;
}
}  // namespace

TEST(Arrivals, PoissonGapsHaveTheTargetMeanAndExponentialShape) {
  ArrivalProcess p(LoadSchedule::constant(1000), 42);
  const auto gaps = gaps_s(p, 200'000);
  double sum = 0, sq = 0;
  int below_mean = 0;
  for (const double g : gaps) {
    sum += g;
    sq += g * g;
    below_mean += g < 1e-3;
  }
  const double mean = sum / static_cast<double>(gaps.size());
  const double sd = std::sqrt(sq / static_cast<double>(gaps.size()) - mean * mean);
  EXPECT_NEAR(mean, 1e-3, 1e-5);  // 1000 RPS
  EXPECT_NEAR(sd / mean, 1.0, 0.02);  // exponential: coefficient of variation 1
  // P(gap < mean) = 1 - 1/e for an exponential.
  EXPECT_NEAR(below_mean / static_cast<double>(gaps.size()), 1 - std::exp(-1.0), 0.005);
}

TEST(Arrivals, SameSeedSameArrivalsOtherSeedOthers) {
  ArrivalProcess a(LoadSchedule::constant(500), 7), b(LoadSchedule::constant(500), 7),
      c(LoadSchedule::constant(500), 8);
  int same_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto ta = a.next();
    EXPECT_EQ(ta, b.next());
    same_c += ta == c.next();
  }
  EXPECT_LT(same_c, 10);
}

TEST(Arrivals, RateStepsAreFollowed) {
  const auto schedule = LoadSchedule::parse("0:1000,10:0,20:4000");
  ArrivalProcess p(schedule, 3);
  int in[3] = {0, 0, 0};
  for (;;) {
    const double t = static_cast<double>(p.next()) / 1e9;
    if (t >= 30) break;
    ++in[static_cast<int>(t / 10)];
  }
  EXPECT_NEAR(in[0], 10'000, 400);
  EXPECT_EQ(in[1], 0);
  EXPECT_NEAR(in[2], 40'000, 800);
  EXPECT_DOUBLE_EQ(schedule.expected_arrivals(30), 50'000);
  EXPECT_DOUBLE_EQ(schedule.rps_at(25), 4000);
}

TEST(Arrivals, ZeroRateForEverEnds) {
  ArrivalProcess p(LoadSchedule::parse("0:0"), 1);
  EXPECT_EQ(p.next(), UINT64_MAX);
}

TEST(Arrivals, BadSchedulesNameTheStep) {
  EXPECT_THROW(LoadSchedule::parse("abc"), std::invalid_argument);
  EXPECT_THROW(LoadSchedule::parse("5:100"), std::invalid_argument);
  EXPECT_THROW(LoadSchedule::parse("0:-1"), std::invalid_argument);
  try {
    LoadSchedule::parse("0:100,x:3");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'x:3'"), std::string::npos);
  }
}
