#include "pimcloud/harness/replication.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstring>
#include <filesystem>

using namespace pimcloud::harness;

TEST(Replication, CopyOnNodeZeroIsServedLocally) {
  std::vector<std::byte> data(1 << 20);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7);
  ReplicatedRegion region(data);
  const std::byte* master = region.on_node(0);
  std::string error;
  ASSERT_TRUE(region.replicate(0, error)) << error;
  const std::byte* copy = region.on_node(0);
  EXPECT_NE(copy, master);
  EXPECT_EQ(std::memcmp(copy, data.data(), data.size()), 0);
  EXPECT_EQ(region.replica_nodes(), std::vector<int>{0});
  if (numa_node_count() == 1) {
    EXPECT_EQ(region.local(), copy);
  }
  ASSERT_TRUE(region.drop(0, error));
  EXPECT_EQ(region.on_node(0), master);
  EXPECT_TRUE(region.replica_nodes().empty());
}

TEST(Replication, MissingNodeIsNamed) {
  ReplicatedRegion region(std::vector<std::byte>(16));
  std::string error;
  EXPECT_FALSE(region.replicate(63, error));
  EXPECT_NE(error.find("node 63"), std::string::npos);
}

TEST(Replication, CurrentNodeIsTheNodeOfTheCpuWeRunOn) {
  // Pinned to one CPU, the node must be the one sysfs lists that CPU under.
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &saved)) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  int expected = -1;
  for (int node = 0; node < numa_node_count(); ++node) {
    if (std::filesystem::exists("/sys/devices/system/node/node" + std::to_string(node) +
                                "/cpu" + std::to_string(cpu))) {
      expected = node;
    }
  }
  const int node = current_numa_node();
  sched_setaffinity(0, sizeof saved, &saved);
  EXPECT_EQ(node, expected < 0 ? 0 : expected);
}
