// Page migration throughput through the backend's chunked move_pages, on this kernel:
//   pimcloud_agent_migration_bench [MiB=64] [from-node=1] [to-node=2]
// Prints pages per second for several chunk sizes, both directions. On a machine with one
// node, run it with 0 0: pages then stay put and only the system-call path is measured.
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backend/NumaCalls.h"

using namespace pimcloud;

namespace {

double now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t mib = argc > 1 ? static_cast<std::size_t>(std::atol(argv[1])) : 64;
  const int from = argc > 2 ? std::atoi(argv[2]) : 1;
  const int to = argc > 3 ? std::atoi(argv[3]) : 2;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t n = mib * 1024 * 1024 / page;
  void* mem = mmap(nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  std::memset(mem, 1, n * page);
  std::vector<std::uintptr_t> pages(n);
  for (std::size_t i = 0; i < n; ++i) pages[i] = reinterpret_cast<std::uintptr_t>(mem) + i * page;
  const auto call = realMovePages();
  const MoveResult first = movePagesChunked(call, getpid(), pages, from, {512});
  if (!first.status.ok) {
    std::fprintf(stderr, "move_pages to node %d: %s\n", from, first.status.error.c_str());
    return 1;
  }
  std::printf("%zu pages of %zu bytes, node %d <-> node %d\n", n, page, from, to);
  std::printf("%8s %10s %14s %10s %14s\n", "chunk", "moved", "pages/s ->", "moved", "pages/s <-");
  for (std::size_t chunk : {64UL, 512UL, 4096UL}) {
    double t0 = now();
    const MoveResult there = movePagesChunked(call, getpid(), pages, to, {chunk});
    const double a = now() - t0;
    t0 = now();
    const MoveResult back = movePagesChunked(call, getpid(), pages, from, {chunk});
    const double b = now() - t0;
    std::printf("%8zu %10llu %14.0f %10llu %14.0f%s\n", chunk,
                static_cast<unsigned long long>(there.moved), static_cast<double>(n) / a,
                static_cast<unsigned long long>(back.moved), static_cast<double>(n) / b,
                there.targetFull || back.targetFull ? "  (a node filled up)" : "");
  }
  munmap(mem, n * page);
  return 0;
}
