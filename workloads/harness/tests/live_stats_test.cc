#include "pimcloud/harness/live_stats.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

using namespace pimcloud::harness;

TEST(LiveStats, IntervalLineHasTailMeanCountRateAndThreads) {
  IntervalStats stats("kv", 2);
  stats.set_tids({111, 222});
  for (std::uint64_t i = 1; i <= 100; ++i) {
    // sojourn i*1000 ns, service 10 ns
    stats.add(static_cast<int>(i % 2), {i, 0, 0, i * 1000 - 10, i * 1000, 10});
  }
  const std::string line = stats.take_interval(5'000'000'000, 100'000'000, "measured", 900);
  EXPECT_NE(line.find("\"app\":\"kv\""), std::string::npos);
  EXPECT_NE(line.find("\"t_ns\":5000000000"), std::string::npos);
  EXPECT_NE(line.find("\"count\":100,"), std::string::npos);
  EXPECT_NE(line.find("\"rps\":1000.000"), std::string::npos);
  EXPECT_NE(line.find("\"p99_ns\":99000,"), std::string::npos);
  EXPECT_NE(line.find("\"mean_ns\":50500,"), std::string::npos);
  EXPECT_NE(line.find("\"tids\":[111,222]"), std::string::npos);
  EXPECT_NE(line.find("{\"worker\":1,\"tid\":222,\"count\":50,"), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const std::string next = stats.take_interval(5'100'000'000, 100'000'000, "measured", 900);
  EXPECT_NE(next.find("\"count\":0,"), std::string::npos);
  EXPECT_NE(next.find("\"seq\":1,"), std::string::npos);
}

TEST(LiveStats, PublishesToFileAndUnixSocket) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("harness-live-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "live.jsonl").string();
  const std::string sock = (dir / "s").string();
  std::filesystem::remove(file);
  std::filesystem::remove(sock);
  const int rx = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, sock.c_str());
  ASSERT_EQ(bind(rx, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  {
    StatsPublisher pub(file, sock);
    pub.publish("{\"a\":1}");
    pub.publish("{\"a\":2}");
    EXPECT_EQ(pub.dropped(), 0u);
  }
  char buf[64] = {};
  ASSERT_EQ(recv(rx, buf, sizeof buf, 0), 7);
  EXPECT_STREQ(buf, "{\"a\":1}");
  close(rx);
  std::ifstream in(file);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(l1, "{\"a\":1}");
  EXPECT_EQ(l2, "{\"a\":2}");
}

TEST(LiveStats, MissingReaderDropsWithoutFailing) {
  StatsPublisher pub("", "/tmp/no-such-reader-socket-for-harness-test");
  pub.publish("x");
  EXPECT_EQ(pub.dropped(), 1u);
}
