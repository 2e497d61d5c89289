// Best-effort jobs (batch work colocated with the latency-critical services):
//   pimcloud-be compute  --threads N --seconds S   dependent FMA chains, no memory traffic
//   pimcloud-be membw    --threads N --seconds S --mib M   STREAM triad over M MiB/thread
// Each prints one JSON line per interval (and appends it to --stats-file):
//   {"job":"membw","t_ns":..,"interval_ns":..,"work":..,"unit":"GB","rate":..,"tids":[..]}
// and a final line with "final":true and the whole run's rate. Stops at S seconds, or on
// SIGTERM/SIGINT when S is 0.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pimcloud/harness/clock.h"

namespace {

using pimcloud::harness::now_ns;

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

struct Options {
  std::string job;
  int threads = 1;
  double seconds = 0;
  std::size_t mib = 64;
  std::uint64_t interval_ns = 1'000'000'000;
  std::string stats_file;
};

Options parse(int argc, char** argv) {
  Options o;
  if (argc < 2) throw std::invalid_argument("give a job: compute or membw");
  o.job = argv[1];
  if (o.job != "compute" && o.job != "membw") {
    throw std::invalid_argument("unknown job '" + o.job + "': use compute or membw");
  }
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag != "--threads" && flag != "--seconds" && flag != "--mib" &&
        flag != "--interval-ms" && flag != "--stats-file") {
      throw std::invalid_argument("unknown option " + flag);
    }
    try {
      if (flag == "--threads") o.threads = std::stoi(value);
      else if (flag == "--seconds") o.seconds = std::stod(value);
      else if (flag == "--mib") o.mib = std::stoul(value);
      else if (flag == "--interval-ms") o.interval_ns = static_cast<std::uint64_t>(std::stod(value) * 1e6);
      else o.stats_file = value;
    } catch (const std::logic_error&) {
      throw std::invalid_argument(flag + " " + value + ": not a valid number");
    }
  }
  if (o.threads < 1 || o.mib < 1 || o.seconds < 0 || o.interval_ns < 1'000'000) {
    throw std::invalid_argument("--threads and --mib must be >= 1, --seconds >= 0, "
                                "--interval-ms >= 1");
  }
  return o;
}

// Work units done per thread: FMAs (compute) or bytes moved (membw).
void compute_kernel(std::atomic<std::uint64_t>& done) {
  double a[8] = {1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7};
  constexpr std::uint64_t kChunk = 1 << 20;
  while (!g_stop) {
    for (std::uint64_t i = 0; i < kChunk; ++i) {
      for (auto& x : a) x = x * 0.999999 + 0.000001;  // 8 independent FMA chains
    }
    done.fetch_add(kChunk * 8, std::memory_order_relaxed);
  }
  volatile double sink = a[0];
  (void)sink;
}

void membw_kernel(std::atomic<std::uint64_t>& done, std::size_t mib) {
  const std::size_t n = mib * (1 << 20) / (3 * sizeof(double));
  std::vector<double> x(n, 1.0), y(n, 2.0), z(n, 0.0);  // first touch: this thread's node
  // Counted per 64 KiB block, not per pass: in gem5 a run's measured region (tens of
  // simulated ms) may be shorter than one pass of every thread over its buffer.
  constexpr std::size_t kBlock = (64 << 10) / (3 * sizeof(double));
  while (!g_stop) {
    for (std::size_t first = 0; first < n && !g_stop; first += kBlock) {
      const std::size_t last = std::min(n, first + kBlock);
      for (std::size_t i = first; i < last; ++i) z[i] = x[i] + 3.0 * y[i];
      done.fetch_add((last - first) * 3 * sizeof(double), std::memory_order_relaxed);
    }
    std::swap(x, z);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "pimcloud-be: " << e.what()
              << "\nusage: pimcloud-be compute|membw [--threads N] [--seconds S] [--mib M] "
                 "[--interval-ms I] [--stats-file F]\n";
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  int stats_fd = -1;
  if (!o.stats_file.empty()) {
    stats_fd = open(o.stats_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (stats_fd < 0) {
      std::cerr << "pimcloud-be: --stats-file " << o.stats_file << ": " << std::strerror(errno)
                << '\n';
      return 1;
    }
  }
  std::vector<std::atomic<std::uint64_t>> done(static_cast<std::size_t>(o.threads));
  std::vector<pid_t> tids(static_cast<std::size_t>(o.threads), 0);
  std::mutex tid_mutex;
  std::vector<std::thread> workers;
  for (int t = 0; t < o.threads; ++t) {
    workers.emplace_back([&, t] {
      {
        std::lock_guard lock(tid_mutex);
        tids[static_cast<std::size_t>(t)] = gettid();
      }
      if (o.job == "compute") compute_kernel(done[static_cast<std::size_t>(t)]);
      else membw_kernel(done[static_cast<std::size_t>(t)], o.mib);
    });
  }
  const bool compute = o.job == "compute";
  const double scale = compute ? 2e-9 : 1e-9;  // an FMA is 2 flops; bytes -> GB
  auto line = [&](std::uint64_t t, std::uint64_t span, std::uint64_t work, bool final) {
    std::string tid_list;
    {
      std::lock_guard lock(tid_mutex);
      for (std::size_t i = 0; i < tids.size(); ++i) tid_list += (i ? "," : "") + std::to_string(tids[i]);
    }
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "{\"job\":\"%s\",\"t_ns\":%llu,\"interval_ns\":%llu,\"work\":%.6g,"
                  "\"unit\":\"%s\",\"rate\":%.4f,\"final\":%s,\"tids\":[",
                  o.job.c_str(), static_cast<unsigned long long>(t),
                  static_cast<unsigned long long>(span), static_cast<double>(work) * scale,
                  compute ? "GFLOP" : "GB",
                  span ? static_cast<double>(work) * scale * 1e9 / static_cast<double>(span) : 0.0,
                  final ? "true" : "false");
    const std::string text = buf + tid_list + "]}\n";
    std::cout << text << std::flush;
    if (stats_fd >= 0 && write(stats_fd, text.data(), text.size()) < 0) {
      std::cerr << "pimcloud-be: cannot append to " << o.stats_file << '\n';
    }
  };
  const std::uint64_t start = now_ns();
  std::uint64_t last_t = start, last_work = 0;
  auto total = [&] {
    std::uint64_t sum = 0;
    for (auto& d : done) sum += d.load(std::memory_order_relaxed);
    return sum;
  };
  while (!g_stop) {
    pimcloud::harness::sleep_until_ns(last_t + o.interval_ns);
    const std::uint64_t t = now_ns(), work = total();
    line(t, t - last_t, work - last_work, false);
    last_t = t;
    last_work = work;
    if (o.seconds > 0 && static_cast<double>(t - start) >= o.seconds * 1e9) g_stop = true;
  }
  for (auto& w : workers) w.join();
  const std::uint64_t end = now_ns();
  line(end, end - start, total(), true);
  if (stats_fd >= 0) close(stats_fd);
  return 0;
}
