// One clock for every timestamp: CLOCK_MONOTONIC in ns, shared by all processes of a
// machine, so a loopback client and server (and the resource manager) agree on times.
#pragma once

#include <time.h>

#include <cstdint>

namespace pimcloud::harness {

inline std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

inline void sleep_until_ns(std::uint64_t t_ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(t_ns / 1'000'000'000ULL);
  ts.tv_nsec = static_cast<long>(t_ns % 1'000'000'000ULL);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}

}  // namespace pimcloud::harness
