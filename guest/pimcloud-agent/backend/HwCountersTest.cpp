// The agent's reading of the driver's answers (guest/driver/pimcloud_counters.c prints
// them; tests/test_driver_qemu.py runs the real driver): hot pages with their types,
// per-CPU counters, info, errors, and seed 003's latency estimate.
#include "backend/HwCounters.h"

#include <gtest/gtest.h>

#include "backend/Sysfs.h"  // readFile

namespace pimcloud {
namespace {

TEST(HwCounters, HottestAnswerParsesWithTypesAndMappings) {
  std::string error;
  const auto hot = parseHottest(
      "frames 3 node 2 scan_ps 262144000\n"
      "0x40123 977 private ro 4 120 0x7f00aa001000\n"
      "0x40124 500 shared rw 4 120 0x7f00aa002000\n"
      "0x40200 12 private rw - - -\n",
      error);
  ASSERT_TRUE(hot) << error;
  EXPECT_EQ(hot->node, 2);
  EXPECT_EQ(hot->scanPs, 262144000U);
  ASSERT_EQ(hot->pages.size(), 3U);
  EXPECT_EQ(hot->pages[0].pfn, 0x40123U);
  EXPECT_EQ(hot->pages[0].count, 977U);
  EXPECT_FALSE(hot->pages[0].shared);
  EXPECT_FALSE(hot->pages[0].written);
  EXPECT_EQ(hot->pages[0].pid, 120);
  EXPECT_EQ(hot->pages[0].vaddr, 0x7f00aa001000U);
  EXPECT_TRUE(hot->pages[1].shared);
  EXPECT_TRUE(hot->pages[1].written);
  EXPECT_EQ(hot->pages[2].firstCpu, -1);
  EXPECT_EQ(hot->pages[2].pid, 0);
}

TEST(HwCounters, TheSharedFixtureAnswerParses) {  // guest/tests/test_hw_counters.py reads it too
  std::string text;
  ASSERT_TRUE(readFile(std::string(PIMCLOUD_AGENT_FIXTURES) + "/driver/hottest-node2.txt", text));
  std::string error;
  const auto hot = parseHottest(text, error);
  ASSERT_TRUE(hot) << error;
  ASSERT_EQ(hot->pages.size(), 3U);
  EXPECT_EQ(hot->pages[1].count, 500U);
  EXPECT_TRUE(hot->pages[1].shared && hot->pages[1].written);
}

TEST(HwCounters, BadAnswersAreNamed) {
  std::string error;
  EXPECT_FALSE(parseHottest("error: no PimCounters device (no ACPI PIMC table)\n", error));
  EXPECT_EQ(error, "error: no PimCounters device (no ACPI PIMC table)");
  EXPECT_FALSE(parseHottest("frames 2 node 1 scan_ps 5\n0x1 3 private ro 0 - -\n", error));
  EXPECT_NE(error.find("announced 2"), std::string::npos);
  EXPECT_FALSE(parseHottest("frames 1 node 1 scan_ps 5\n0x1 3 cold ro 0 - -\n", error));
  EXPECT_NE(error.find("private|shared"), std::string::npos);
  EXPECT_FALSE(parseCpus("0 1 2\n", error));
  EXPECT_FALSE(parseInfo("stacks 2 cpus 4 max_query 4096 throttle_levels 10 "
                         "throttle_step_ps 2000 decay_period_ps 0\nstack 0 node 1 frames 8\n",
                         error));
  EXPECT_NE(error.find("announced 2"), std::string::npos);
}

TEST(HwCounters, InfoAndCpusParse) {
  std::string error;
  const auto info = parseInfo(
      "stacks 2 cpus 20 max_query 4096 throttle_levels 10 throttle_step_ps 2000 "
      "decay_period_ps 100000000000\nstack 0 node 1 frames 262144\nstack 1 node 2 frames "
      "262144\n",
      error);
  ASSERT_TRUE(info) << error;
  EXPECT_EQ(info->cpus, 20);
  EXPECT_EQ(info->throttleLevels, 10);
  ASSERT_EQ(info->memories.size(), 2U);
  EXPECT_EQ(info->memories[1].node, 2);
  const auto cpus = parseCpus("0 10 4000 100000 0\n1 0 0 100000 3\n", error);
  ASSERT_TRUE(cpus) << error;
  ASSERT_EQ(cpus->size(), 2U);
  EXPECT_EQ((*cpus)[0].outstandingCycles, 4000U);
  EXPECT_EQ((*cpus)[1].throttle, 3);
}

TEST(HwCounters, LatencyEstimateIsMeanOutstandingPlusCacheOverClock) {
  const CpuCounters before{0, 100, 10'000, 0, 0};
  const CpuCounters after{0, 300, 50'000, 0, 0};
  // 200 misses, 40,000 cycles outstanding: 200 cycles each, plus 40 of cache, at 2 GHz.
  const auto ns = latencyEstimateNs(before, after, 40, 2.0);
  ASSERT_TRUE(ns);
  EXPECT_DOUBLE_EQ(*ns, 120.0);
  EXPECT_FALSE(latencyEstimateNs(after, after, 40, 2.0));
}

TEST(HwCounters, AMissingDeviceIsNamed) {
  std::string error;
  EXPECT_FALSE(HwCounters::open(error, "/nonexistent/pimcloud_counters"));
  EXPECT_NE(error.find("cannot open /nonexistent/pimcloud_counters"), std::string::npos);
}

}  // namespace
}  // namespace pimcloud
