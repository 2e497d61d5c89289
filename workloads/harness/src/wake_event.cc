#include "pimcloud/harness/wake_event.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

namespace pimcloud::harness {

namespace {

long futex(std::atomic<std::uint32_t>& word, int op, std::uint32_t value,
           const timespec* timeout, std::uint32_t bitset) {
  // The futex word is the atomic's storage: std::atomic<uint32_t> is lock-free and
  // layout-compatible with uint32_t on Linux.
  static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), op, value, timeout,
                 nullptr, bitset);
}

}  // namespace

// Sleeping and notifying follow Dekker's pattern, both sides sequentially consistent:
// the waiter announces itself in sleepers_ and then re-reads count_; the notifier bumps
// count_ and then reads sleepers_. At least one of them sees the other's write, so either
// the waiter does not sleep or the notifier wakes it; and FUTEX_WAIT itself re-checks
// count_ against the token in the kernel, closing the gap up to the sleep.
bool WakeEvent::sleep(std::uint32_t token, const timespec* deadline) {
  bool timed_out = false;
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  if (count_.load(std::memory_order_seq_cst) == token) {
    // FUTEX_WAIT_BITSET takes an absolute time on CLOCK_MONOTONIC (none: no limit).
    timed_out = futex(count_, FUTEX_WAIT_BITSET_PRIVATE, token, deadline,
                      FUTEX_BITSET_MATCH_ANY) != 0 &&
                errno == ETIMEDOUT;
  }
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  return !timed_out;
}

void WakeEvent::wait(std::uint32_t token) { sleep(token, nullptr); }

bool WakeEvent::wait_until(std::uint32_t token, std::uint64_t deadline_ns) {
  timespec deadline{};
  deadline.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000ULL);
  deadline.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000ULL);
  return sleep(token, &deadline);
}

void WakeEvent::notify(int waiters) {
  count_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;  // the common, cheap case
  futex(count_, FUTEX_WAKE_PRIVATE, static_cast<std::uint32_t>(waiters < 0 ? INT_MAX : waiters),
        nullptr, 0);
}

}  // namespace pimcloud::harness
