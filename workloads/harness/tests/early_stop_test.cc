#include "pimcloud/harness/early_stop.h"

#include <gtest/gtest.h>

#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/synthetic_service.h"

using namespace pimcloud::harness;

TEST(EarlyStop, WilsonBoundsBracketTheProportion) {
  // k = 5 of n = 100 at 95 % one-sided (z = 1.6449): Wilson's 0.02455 and 0.09916.
  EXPECT_NEAR(wilson_lower(5, 100, 0.95), 0.02455, 0.0002);
  EXPECT_NEAR(wilson_upper(5, 100, 0.95), 0.09916, 0.0002);
  EXPECT_DOUBLE_EQ(wilson_lower(0, 50, 0.99), 0.0);
  EXPECT_LT(wilson_upper(0, 1000, 0.99), 0.01);
  EXPECT_GT(wilson_upper(0, 100, 0.99), 0.01);  // 100 punctual answers prove little
}

TEST(EarlyStop, OverdueRequestsStillWaitingCountAsLate) {
  EarlyStopRule rule;
  rule.qos_ns = 1000;
  rule.min_requests = 20;
  EarlyStop stop(rule);
  for (std::uint64_t i = 0; i < 40; ++i) stop.arrival(i * 10);
  // Nothing answered: at t = 1200 every arrival is more than the target ago.
  EXPECT_EQ(stop.check(500), EarlyVerdict::kUndecided);
  EXPECT_EQ(stop.check(1400), EarlyVerdict::kMiss);
  EXPECT_NE(stop.json(7).find("\"discarded\":7"), std::string::npos);
}

TEST(EarlyStop, ARoomMadeBeforehandHoldsOnlyTheArrivalsMade) {
  // Room for 10 of the 40 arrivals: the 30 others are added as they come; the empty room
  // is never taken for arrivals (its zeros would all be overdue at once).
  EarlyStopRule rule;
  rule.qos_ns = 1000;
  rule.min_requests = 20;
  EarlyStop roomy(rule, 1000);
  for (std::uint64_t i = 0; i < 10; ++i) roomy.arrival(10'000 + i);
  EXPECT_EQ(roomy.check(10'500), EarlyVerdict::kUndecided);
  EarlyStop small(rule, 10);
  for (std::uint64_t i = 0; i < 40; ++i) small.arrival(i * 10);
  EXPECT_EQ(small.check(1400), EarlyVerdict::kMiss);
}

TEST(EarlyStop, RoomIsMadeForTheMeasuredRegionAtItsHighestRate) {
  auto room = [](std::vector<std::string> args) {
    return expected_measured_arrivals(parse_options("synthetic", args));
  };
  EXPECT_EQ(room({"--rps", "1000", "--requests", "500"}), 500u);
  // 0.03 s at 50,000 rps (the later, higher step; the warm-up may end in either).
  EXPECT_EQ(room({"--schedule", "0:10000,0.02:50000", "--seconds", "0.03", "--warmup", "250"}),
            static_cast<std::size_t>(50000 * 0.03 * 1.25 + 64));
  EXPECT_EQ(room({"--rps", "1e9", "--seconds", "1000"}), std::size_t{1} << 22);
  EXPECT_EQ(room({"--rps", "100", "--seconds", "inf"}), std::size_t{1} << 22);
}

TEST(EarlyStop, TheChecksOwnCostIsReported) {
  EarlyStopRule rule;
  rule.qos_ns = 1000;
  EarlyStop stop(rule);
  stop.checked(300);
  stop.checked(100);
  const std::string json = stop.json(0);
  EXPECT_NE(json.find("\"checks\":2,\"check_ns_max\":300,\"check_ns_total\":400"),
            std::string::npos)
      << json;
}

TEST(EarlyStop, PunctualAnswersMeetOnlyWhenAsked) {
  for (bool meet : {false, true}) {
    EarlyStopRule rule;
    rule.qos_ns = 1e6;
    rule.stop_on_meet = meet;
    EarlyStop stop(rule);
    for (int i = 0; i < 1000; ++i) {
      stop.arrival(static_cast<std::uint64_t>(i));
      stop.answered(10);
    }
    EXPECT_EQ(stop.check(2000), meet ? EarlyVerdict::kMeet : EarlyVerdict::kUndecided);
  }
}

TEST(EarlyStop, AnOverloadedServiceStopsEarlyAndANormalOneRunsToTheEnd) {
  // One worker answering in ~200 us cannot serve 20000 rps: its queue's wait grows by
  // ~4 s per second of arrivals, a certain miss of 100 ms within ~30 ms; at 200 rps it is
  // idle most of the time. 100 ms leaves room for a busy host (20 ms did not, beside
  // three gem5 processes on two cores).
  auto options = [](const std::string& rps) {
    HarnessOptions o = parse_options("synthetic", {"--rps", rps, "--seconds", "2",
                                                   "--warmup", "10", "--threads", "1",
                                                   "--early-stop-qos-ms", "100"});
    o.service.options["work_us"] = "200";
    return o;
  };
  {
    const HarnessOptions o = options("20000");
    SyntheticService service(o.service);
    const RunResult r = run(service, o);
    EXPECT_NE(r.early_stop.find("\"verdict\":\"miss\""), std::string::npos) << r.early_stop;
    EXPECT_LT(r.measured_ns, 500'000'000u) << "not stopped early";
    EXPECT_EQ(r.early_stop.find("\"checks\":0,"), std::string::npos) << r.early_stop;
  }
  {
    const HarnessOptions o = options("200");
    SyntheticService service(o.service);
    const RunResult r = run(service, o);
    EXPECT_NE(r.early_stop.find("\"verdict\":\"undecided\""), std::string::npos);
    EXPECT_GT(r.measured_ns, 1'900'000'000u);
  }
}
