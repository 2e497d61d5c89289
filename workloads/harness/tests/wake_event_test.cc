#include "pimcloud/harness/wake_event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <deque>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "pimcloud/harness/clock.h"

namespace pimcloud::harness {
namespace {

// Runs `body` on its own thread and aborts the test binary (a failure, instead of a hung
// suite: the stuck thread cannot be joined) if it has not returned within `limit`.
template <typename Body>
void finishes_within(std::chrono::seconds limit, Body body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(limit) != std::future_status::ready) {
    std::cerr << "a waiter was never woken within " << limit.count() << " s\n";
    std::abort();
  }
  done.get();
}

TEST(WakeEvent, ANotifyAfterPrepareMakesWaitReturnAtOnce) {
  WakeEvent event;
  const std::uint32_t token = event.prepare();
  event.notify_one();
  finishes_within(std::chrono::seconds(5), [&] { event.wait(token); });
}

TEST(WakeEvent, WaitUntilGivesUpAtTheDeadline) {
  WakeEvent event;
  const std::uint64_t start = now_ns();
  EXPECT_FALSE(event.wait_until(event.prepare(), start + 20'000'000));
  EXPECT_GE(now_ns() - start, 20'000'000u);
}

TEST(WakeEvent, WaitUntilReturnsTrueWhenNotifiedBeforeTheDeadline) {
  WakeEvent event;
  const std::uint32_t token = event.prepare();
  std::thread notifier([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    event.notify_all();
  });
  const std::uint64_t start = now_ns();
  EXPECT_TRUE(event.wait_until(token, start + 10'000'000'000ULL));
  EXPECT_LT(now_ns() - start, 5'000'000'000u);
  notifier.join();
}

TEST(WakeEvent, APredicateOnAFlagSetWithoutTheMutexIsNotMissed) {
  // The notifier sets an atomic flag and notifies without taking the waiter's mutex.
  for (int round = 0; round < 200; ++round) {
    WakeEvent event;
    std::mutex mutex;
    std::atomic<bool> stop{false};
    std::thread notifier([&] {
      stop = true;
      event.notify_all();
    });
    finishes_within(std::chrono::seconds(5), [&] {
      std::unique_lock lock(mutex);
      event.wait(lock, [&] { return stop.load(); });
    });
    notifier.join();
  }
}

TEST(WakeEvent, AWorkQueueHandsEveryItemToItsConsumers) {
  // The harness's pattern at a high rate: producers push and notify one, consumers sleep
  // when the queue is empty. Every item must be consumed and every consumer must finish.
  constexpr int kProducers = 2, kConsumers = 4, kItems = 100'000;
  std::mutex mutex;
  std::deque<int> items;
  bool closed = false;
  WakeEvent ready;
  std::atomic<long long> sum{0}, count{0};
  finishes_within(std::chrono::seconds(60), [&] {
    std::vector<std::thread> consumers;
    for (int c = 0; c < kConsumers; ++c) {
      consumers.emplace_back([&] {
        for (;;) {
          std::unique_lock lock(mutex);
          ready.wait(lock, [&] { return closed || !items.empty(); });
          if (items.empty()) return;
          const int item = items.front();
          items.pop_front();
          lock.unlock();
          sum += item;
          ++count;
        }
      });
    }
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&] {
        for (int i = 1; i <= kItems; ++i) {
          {
            std::lock_guard lock(mutex);
            items.push_back(i);
          }
          ready.notify_one();
          if (i % 1024 == 0) std::this_thread::yield();  // let consumers drain and sleep
        }
      });
    }
    for (auto& p : producers) p.join();
    {
      std::lock_guard lock(mutex);
      closed = true;
    }
    ready.notify_all();
    for (auto& c : consumers) c.join();
  });
  EXPECT_EQ(count.load(), static_cast<long long>(kProducers) * kItems);
  EXPECT_EQ(sum.load(), static_cast<long long>(kProducers) * kItems * (kItems + 1) / 2);
}

}  // namespace
}  // namespace pimcloud::harness
