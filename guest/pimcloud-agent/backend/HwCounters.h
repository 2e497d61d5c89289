// The hardware counters as the guest driver gives them (guest/driver/pimcloud_counters.c):
// write a command line to /dev/pimcloud_counters, read the answer's text lines. The
// parsers are separate so they are tested on the driver's text without a device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pimcloud {

inline constexpr const char* kHwCountersDevice = "/dev/pimcloud_counters";

// One frame of a "hottest" answer (the paper's hot-page call).
struct HotPage {
  std::uint64_t pfn = 0;
  std::uint64_t count = 0;
  bool shared = false;   // more than one CPU touched it
  bool written = false;  // read-write rather than read-only
  int firstCpu = -1;     // -1: only caches' writebacks reached it
  int pid = 0;           // a process mapping it, 0 if none was found
  std::uint64_t vaddr = 0;
};

struct HotPages {
  int node = 0;
  std::uint64_t scanPs = 0;  // simulated time the device took
  std::vector<HotPage> pages;
};

// Per-CPU counters: requests that reached memory and their outstanding cycles.
struct CpuCounters {
  int cpu = 0;
  std::uint64_t misses = 0;
  std::uint64_t outstandingCycles = 0;
  std::uint64_t cycles = 0;
  int throttle = 0;
};

struct CountedMemory {
  int stack = 0;
  int node = 0;
  std::uint64_t frames = 0;
};

struct HwInfo {
  int cpus = 0;
  std::uint64_t maxQuery = 0;
  int throttleLevels = 0;
  std::uint64_t throttleStepPs = 0;
  std::uint64_t decayPeriodPs = 0;
  std::vector<CountedMemory> memories;
};

// Parsers of the driver's answers; nullopt with `error` naming the bad line.
std::optional<HotPages> parseHottest(const std::string& text, std::string& error);
std::optional<std::vector<CpuCounters>> parseCpus(const std::string& text, std::string& error);
std::optional<HwInfo> parseInfo(const std::string& text, std::string& error);

// Seed 003's memory-latency estimate from two readings of one CPU's counters: the mean
// cycles a miss stayed outstanding plus the cache's own latency, in nanoseconds.
// nullopt when no miss happened between the readings.
std::optional<double> latencyEstimateNs(const CpuCounters& before, const CpuCounters& after,
                                        double cacheCycles, double cpuGhz);

class HwCounters {
 public:
  // nullopt (with `error`) when the device file is missing or the driver found no device.
  static std::optional<HwCounters> open(std::string& error,
                                        const std::string& path = kHwCountersDevice);
  // The driver's file without asking for the device (whois answers without one).
  static HwCounters driver(const std::string& path = kHwCountersDevice) {
    return HwCounters(path);
  }

  // The driver's raw answer to one command line (an "error: ..." line on failure).
  std::string ask(const std::string& command) const;

  std::optional<HwInfo> info(std::string& error) const;
  std::optional<HotPages> hottest(int n, int node, std::string& error) const;
  std::optional<std::vector<CpuCounters>> cpus(std::string& error) const;
  bool setThrottle(int cpu, int level, std::string& error) const;

 private:
  explicit HwCounters(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace pimcloud
