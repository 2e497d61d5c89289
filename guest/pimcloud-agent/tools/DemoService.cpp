// A stand-in LC service for the guest integration test of the agent (no engine, no
// requests): it holds private memory that its worker threads keep touching, and every
// 100 ms publishes a stats line in the harness's format whose p99 depends on how many
// CPUs the kernel lets it run on: above QoS while it has fewer than --need CPUs. So the
// agent's decisions come back through the real kernel (cpuset -> affinity -> latency).
//
//   pimcloud_agent_demo_service --name a --need 14 --qos-ns 1000000 --mib 64 --threads 4
//                               --seconds 20 --stats /run/pimcloud/latency.jsonl
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  }
  return fallback;
}

std::int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = arg(argc, argv, "--name", "demo");
  const int need = std::atoi(arg(argc, argv, "--need", "2").c_str());
  const double qos = std::atof(arg(argc, argv, "--qos-ns", "1000000").c_str());
  const std::size_t mib = static_cast<std::size_t>(std::atol(arg(argc, argv, "--mib", "64").c_str()));
  const int threads = std::atoi(arg(argc, argv, "--threads", "4").c_str());
  const double seconds = std::atof(arg(argc, argv, "--seconds", "20").c_str());
  const std::string stats = arg(argc, argv, "--stats", "/run/pimcloud/latency.jsonl");

  const std::size_t bytes = mib << 20;
  auto* mem = static_cast<unsigned char*>(
      mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  std::memset(mem, 1, bytes);
  std::atomic<bool> stop{false};
  std::mutex tidsMutex;
  std::vector<long> tids;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      {
        std::lock_guard lock(tidsMutex);
        tids.push_back(syscall(SYS_gettid));
      }
      // Each worker touches its own slice, the hottest pages first and most often.
      const std::size_t slice = bytes / static_cast<std::size_t>(threads);
      unsigned char* base = mem + slice * static_cast<std::size_t>(t);
      while (!stop.load()) {
        for (std::size_t off = 0; off < slice / 8; off += 4096) base[off]++;
        usleep(1000);
      }
    });
  }
  const int fd = open(stats.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::perror(stats.c_str());
    return 1;
  }
  const std::int64_t start = nowNs();
  for (std::int64_t t = start; t - start < static_cast<std::int64_t>(seconds * 1e9);) {
    t += 100'000'000;
    timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    const int have = CPU_COUNT(&set);
    const double p99 = have < need ? qos * 1.5 : qos * 0.5;
    std::string tidList;
    {
      std::lock_guard lock(tidsMutex);
      for (long tid : tids) tidList += (tidList.empty() ? "" : ",") + std::to_string(tid);
    }
    char line[1024];
    const int n = std::snprintf(
        line, sizeof line,
        "{\"app\":\"%s\",\"pid\":%d,\"t_ns\":%lld,\"count\":100,\"rps\":1000,\"p99_ns\":%.0f,"
        "\"mean_ns\":%.0f,\"tids\":[%s],\"cpus\":%d}\n",
        name.c_str(), getpid(), static_cast<long long>(t), p99, p99 / 3, tidList.c_str(), have);
    if (write(fd, line, static_cast<std::size_t>(n)) != n) break;
  }
  stop.store(true);
  for (auto& w : workers) w.join();
  close(fd);
  return 0;
}
