// WakeEvent: a wait/notify point on one futex word, used instead of
// std::condition_variable in every thread hand-off of the harness and the services.
//
// Why: glibc 2.36 (Debian 12, the guest's C library) can lose a pthread_cond_signal and
// then hang the next signaller for good inside __condvar_quiesce_and_switch_g1, waiting
// for a waiter that will never be woken (sourceware bug 25847, fixed upstream in 2.41).
// A gem5 run caught it: kvstore's load generator blocked in pthread_cond_signal while all
// four workers slept in pthread_cond_wait with work queued. An event count on one futex
// word has no groups to switch, so it cannot get into that state.
//
// Use (the same shape as a condition variable, with the caller's mutex):
//   notifier: change the state under the mutex, then notify_one()/notify_all();
//   waiter:   event.wait(lock, [&] { return ready; });
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <mutex>

namespace pimcloud::harness {

class WakeEvent {
 public:
  WakeEvent() = default;
  WakeEvent(const WakeEvent&) = delete;
  WakeEvent& operator=(const WakeEvent&) = delete;

  // The event count now. Read it before checking the condition, then pass it to wait():
  // a notify in between makes wait() return at once.
  std::uint32_t prepare() const { return count_.load(std::memory_order_seq_cst); }
  // Sleeps until a notify after prepare() returned `token` (or spuriously).
  void wait(std::uint32_t token);
  // As wait(), but gives up at `deadline_ns` on CLOCK_MONOTONIC (now_ns()'s clock);
  // false when the deadline passed.
  bool wait_until(std::uint32_t token, std::uint64_t deadline_ns);

  void notify_one() { notify(1); }
  void notify_all() { notify(-1); }

  // Condition-variable style: `lock` is held on entry and on return, released while
  // sleeping; returns when `ready()` holds.
  // The token is taken before each check, so a notifier that changes an atomic flag
  // without the mutex is not missed either.
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    for (;;) {
      const std::uint32_t token = prepare();
      if (ready()) return;
      lock.unlock();
      wait(token);
      lock.lock();
    }
  }
  // As above with a deadline; returns ready() (false only on timeout).
  template <typename Ready>
  bool wait_until(std::unique_lock<std::mutex>& lock, std::uint64_t deadline_ns, Ready ready) {
    for (;;) {
      const std::uint32_t token = prepare();
      if (ready()) return true;
      lock.unlock();
      const bool woken = wait_until(token, deadline_ns);
      lock.lock();
      if (!woken) return ready();
    }
  }

 private:
  // FUTEX_WAIT while count_ == token, until `deadline` (CLOCK_MONOTONIC) if not null;
  // false on timeout.
  bool sleep(std::uint32_t token, const timespec* deadline);
  void notify(int waiters);

  std::atomic<std::uint32_t> count_{0};    // the futex word: bumped by every notify
  std::atomic<std::uint32_t> sleepers_{0};  // threads in (or entering) FUTEX_WAIT
};

}  // namespace pimcloud::harness
