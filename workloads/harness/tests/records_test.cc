#include "pimcloud/harness/records.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace pimcloud::harness;

namespace {
std::string temp_dir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("harness-records-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(Records, LatsBinIsThreeUint64PerRequestQueueServiceSojourn) {
  std::vector<RequestRecord> recs = {
      {10, 0, 1000, 1500, 2500, 1000},  // queue 500, service 1000, sojourn 1500
      {11, 3, 2000, 2000, 2100, 100},
  };
  const std::string path = temp_dir() + "/lats.bin";
  write_lats_bin(path, recs);
  const std::string bytes = slurp(path);
  ASSERT_EQ(bytes.size(), 2u * 24u);
  std::uint64_t words[6];
  std::memcpy(words, bytes.data(), sizeof words);
  EXPECT_EQ(words[0], 500u);
  EXPECT_EQ(words[1], 1000u);
  EXPECT_EQ(words[2], 1500u);
  EXPECT_EQ(words[3], 0u);
  EXPECT_EQ(words[4], 100u);
  EXPECT_EQ(words[5], 100u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 500 % 256);  // little-endian
  const auto back = read_lats_bin(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].sojourn_ns, 1500u);
}

TEST(Records, CsvHasTheDocumentedColumns) {
  const std::string path = temp_dir() + "/requests.csv";
  write_requests_csv(path, {{7, 2, 100, 150, 400, 250, 120, 30, 130}});
  EXPECT_EQ(slurp(path),
            "request_id,thread,scheduled_ns,start_ns,end_ns,queue_ns,service_ns,sojourn_ns,"
            "serial_ns,serial_wait_ns,released_ns\n"
            "7,2,100,150,400,50,250,300,120,30,130\n");
}

TEST(Records, QuantileIsNearestRank) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t i = 1; i <= 100; ++i) v.push_back(101 - i);
  EXPECT_EQ(quantile(v, 0.99), 99u);
  EXPECT_EQ(quantile(v, 0.5), 50u);
  EXPECT_EQ(quantile(v, 1.0), 100u);
  EXPECT_EQ(quantile({}, 0.99), 0u);
}

TEST(Records, UnwritableFolderIsNamed) {
  try {
    atomic_write("/nonexistent-folder/x", "a");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-folder/x"), std::string::npos);
  }
}
