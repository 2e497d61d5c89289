#include "pimcloud/harness/replication.h"

#include <gtest/gtest.h>

#include <cstring>

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
