// SerialSection: the hold time and the wait for the lock, each in its own field.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "pimcloud/harness/service.h"

namespace pimcloud::harness {
namespace {

using namespace std::chrono_literals;

TEST(SerialSection, RecordsTheHoldAndTheWaitApart) {
  std::mutex lock;
  Response first, second;
  std::atomic<bool> held{false};
  std::thread holder([&] {
    SerialSection section(lock, first);
    held = true;
    std::this_thread::sleep_for(50ms);
  });
  while (!held) std::this_thread::yield();
  {
    SerialSection section(lock, second);
    std::this_thread::sleep_for(5ms);
  }
  holder.join();
  EXPECT_GE(first.serial_ns, 50'000'000u);
  EXPECT_LT(first.serial_wait_ns, 5'000'000u);  // the lock was free
  EXPECT_GE(second.serial_ns, 5'000'000u);
  EXPECT_LT(second.serial_ns, 40'000'000u);     // its own hold, not the other's
  EXPECT_GE(second.serial_wait_ns, 20'000'000u);  // waited for most of the 50 ms hold
}

TEST(SerialSection, AddsUpOverSeveralSectionsOfOneRequest) {
  std::mutex lock;
  Response response;
  for (int i = 0; i < 3; ++i) {
    SerialSection section(lock, response);
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_GE(response.serial_ns, 6'000'000u);
}

}  // namespace
}  // namespace pimcloud::harness
