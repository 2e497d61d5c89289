#include "pimcloud/harness/replication.h"

#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace pimcloud::harness {

int current_numa_node() {
  // The system call, not glibc's getcpu(): that goes through the vDSO, which reads the
  // CPU and node from a segment limit with LSL, an instruction gem5 v24.0.0.1 does not
  // implement (it leaves the register as it was, so the node would be garbage).
  unsigned cpu = 0, node = 0;
  if (syscall(SYS_getcpu, &cpu, &node, nullptr) != 0) return 0;
  return static_cast<int>(node);
}

int numa_node_count() {
  int count = 0;
  std::error_code ec;
  for (int n = 0; n < kMaxNumaNodes; ++n) {
    if (std::filesystem::exists("/sys/devices/system/node/node" + std::to_string(n), ec)) {
      count = n + 1;
    }
  }
  return count ? count : 1;
}

ReplicatedRegion::ReplicatedRegion(std::vector<std::byte> master) : master_(std::move(master)) {
  for (auto& c : copies_) c.store(nullptr, std::memory_order_relaxed);
}

ReplicatedRegion::~ReplicatedRegion() {
  for (const auto& [addr, len] : mappings_) munmap(addr, len);
}

bool ReplicatedRegion::replicate(int node, std::string& error) {
  if (node < 0 || node >= numa_node_count()) {
    error = "NUMA node " + std::to_string(node) + " does not exist (this machine has " +
            std::to_string(numa_node_count()) + ")";
    return false;
  }
  std::lock_guard lock(mutex_);
  if (copies_[static_cast<std::size_t>(node)].load()) return true;
  const std::size_t len = master_.empty() ? 1 : master_.size();
  void* addr = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) {
    error = std::string("mmap: ") + std::strerror(errno);
    return false;
  }
  unsigned long mask[kMaxNumaNodes / (8 * sizeof(unsigned long)) + 1] = {};
  mask[static_cast<std::size_t>(node) / (8 * sizeof(unsigned long))] |=
      1UL << (static_cast<unsigned>(node) % (8 * sizeof(unsigned long)));
  // maxnode counts bits and the kernel wants one more than the highest.
  if (mbind(addr, len, MPOL_BIND, mask, kMaxNumaNodes + 1, 0) != 0) {
    error = std::string("mbind to node ") + std::to_string(node) + ": " + std::strerror(errno);
    munmap(addr, len);
    return false;
  }
  std::memcpy(addr, master_.data(), master_.size());  // first touch places pages on `node`
  mprotect(addr, len, PROT_READ);
  mappings_.emplace_back(addr, len);
  copies_[static_cast<std::size_t>(node)].store(static_cast<const std::byte*>(addr),
                                                std::memory_order_release);
  return true;
}

bool ReplicatedRegion::drop(int node, std::string& error) {
  if (node < 0 || node >= kMaxNumaNodes) {
    error = "NUMA node " + std::to_string(node) + " is out of range";
    return false;
  }
  copies_[static_cast<std::size_t>(node)].store(nullptr, std::memory_order_release);
  return true;
}

std::vector<int> ReplicatedRegion::replica_nodes() const {
  std::vector<int> out;
  for (int n = 0; n < kMaxNumaNodes; ++n) {
    if (copies_[static_cast<std::size_t>(n)].load(std::memory_order_acquire)) out.push_back(n);
  }
  return out;
}

const std::byte* ReplicatedRegion::on_node(int node) const {
  if (node >= 0 && node < kMaxNumaNodes) {
    if (const auto* copy = copies_[static_cast<std::size_t>(node)].load(std::memory_order_acquire)) {
      return copy;
    }
  }
  return master_.data();
}

const std::byte* ReplicatedRegion::local() const { return on_node(current_numa_node()); }

}  // namespace pimcloud::harness
