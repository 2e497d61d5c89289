#include "backend/HwCounters.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace pimcloud {
namespace {

bool failed(const std::string& text, std::string& error) {
  if (text.rfind("error:", 0) == 0) {
    error = text.substr(0, text.find('\n'));
    return true;
  }
  return false;
}

// "-" or a number.
bool optionalNumber(const std::string& field, long long& out, int base = 10) {
  if (field == "-") return true;
  try {
    std::size_t used = 0;
    out = std::stoll(field, &used, base);
    return used == field.size();
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

std::optional<HotPages> parseHottest(const std::string& text, std::string& error) {
  if (failed(text, error)) return std::nullopt;
  std::istringstream in(text);
  std::string line;
  HotPages out;
  std::size_t expected = 0;
  if (!std::getline(in, line) ||
      std::sscanf(line.c_str(), "frames %zu node %d scan_ps %" SCNu64, &expected, &out.node,
                  &out.scanPs) != 3) {
    error = "hottest: first line '" + line + "' is not 'frames N node K scan_ps T'";
    return std::nullopt;
  }
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string pfn, count, sharing, access, cpu, pid, vaddr;
    if (!(fields >> pfn >> count >> sharing >> access >> cpu >> pid >> vaddr) ||
        (sharing != "private" && sharing != "shared") || (access != "ro" && access != "rw")) {
      error = "hottest: line '" + line + "' is not 'pfn count private|shared ro|rw cpu pid vaddr'";
      return std::nullopt;
    }
    long long p = 0, c = 0, cpuId = -1, owner = 0, address = 0;
    if (!optionalNumber(pfn, p, 16) || !optionalNumber(count, c) ||
        !optionalNumber(cpu, cpuId) || !optionalNumber(pid, owner) ||
        !optionalNumber(vaddr, address, 16)) {
      error = "hottest: a number of line '" + line + "' does not parse";
      return std::nullopt;
    }
    out.pages.push_back({static_cast<std::uint64_t>(p), static_cast<std::uint64_t>(c),
                         sharing == "shared", access == "rw", static_cast<int>(cpuId),
                         static_cast<int>(owner), static_cast<std::uint64_t>(address)});
  }
  if (out.pages.size() != expected) {
    error = "hottest: announced " + std::to_string(expected) + " frames, got " +
            std::to_string(out.pages.size());
    return std::nullopt;
  }
  return out;
}

std::optional<std::vector<CpuCounters>> parseCpus(const std::string& text, std::string& error) {
  if (failed(text, error)) return std::nullopt;
  std::istringstream in(text);
  std::string line;
  std::vector<CpuCounters> out;
  while (std::getline(in, line)) {
    CpuCounters c;
    std::istringstream fields(line);
    if (!(fields >> c.cpu >> c.misses >> c.outstandingCycles >> c.cycles >> c.throttle)) {
      error = "cpus: line '" + line + "' is not 'cpu misses outstanding cycles throttle'";
      return std::nullopt;
    }
    out.push_back(c);
  }
  return out;
}

std::optional<HwInfo> parseInfo(const std::string& text, std::string& error) {
  if (failed(text, error)) return std::nullopt;
  std::istringstream in(text);
  std::string line;
  HwInfo info;
  int stacks = 0;
  if (!std::getline(in, line) ||
      std::sscanf(line.c_str(),
                  "stacks %d cpus %d max_query %" SCNu64 " throttle_levels %d throttle_step_ps %" SCNu64
                  " decay_period_ps %" SCNu64,
                  &stacks, &info.cpus, &info.maxQuery,
                  &info.throttleLevels, &info.throttleStepPs,
                  &info.decayPeriodPs) != 6) {
    error = "info: first line '" + line + "' does not parse";
    return std::nullopt;
  }
  while (std::getline(in, line)) {
    CountedMemory m;
    if (std::sscanf(line.c_str(), "stack %d node %d frames %" SCNu64, &m.stack, &m.node,
                    &m.frames) != 3) {
      error = "info: line '" + line + "' is not 'stack S node K frames F'";
      return std::nullopt;
    }
    info.memories.push_back(m);
  }
  if (static_cast<int>(info.memories.size()) != stacks) {
    error = "info: announced " + std::to_string(stacks) + " memories, listed " +
            std::to_string(info.memories.size());
    return std::nullopt;
  }
  return info;
}

std::optional<double> latencyEstimateNs(const CpuCounters& before, const CpuCounters& after,
                                        double cacheCycles, double cpuGhz) {
  if (after.misses <= before.misses || cpuGhz <= 0) return std::nullopt;
  const double misses = static_cast<double>(after.misses - before.misses);
  const double outstanding =
      static_cast<double>(after.outstandingCycles - before.outstandingCycles);
  return (cacheCycles + outstanding / misses) / cpuGhz;
}

std::optional<HwCounters> HwCounters::open(std::string& error, const std::string& path) {
  HwCounters counters(path);
  const std::string answer = counters.ask("info");
  if (failed(answer, error)) {
    error = path + ": " + error;
    return std::nullopt;
  }
  return counters;
}

std::string HwCounters::ask(const std::string& command) const {
  const int fd = ::open(path_.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return "error: cannot open " + path_ + ": " + std::strerror(errno) + "\n";
  const std::string line = command + "\n";
  std::string answer;
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    answer = "error: the driver refused '" + command + "': " + std::strerror(errno) + "\n";
  } else {
    char buffer[65536];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof(buffer))) > 0) answer.append(buffer, got);
  }
  ::close(fd);
  return answer;
}

std::optional<HwInfo> HwCounters::info(std::string& error) const {
  return parseInfo(ask("info"), error);
}

std::optional<HotPages> HwCounters::hottest(int n, int node, std::string& error) const {
  return parseHottest(ask("hottest " + std::to_string(n) + " " + std::to_string(node)), error);
}

std::optional<std::vector<CpuCounters>> HwCounters::cpus(std::string& error) const {
  return parseCpus(ask("cpus"), error);
}

bool HwCounters::setThrottle(int cpu, int level, std::string& error) const {
  const std::string answer =
      ask("throttle " + std::to_string(cpu) + " " + std::to_string(level));
  return !failed(answer, error);
}

}  // namespace pimcloud
