// Per-stack copies of a service's read-only data set. Linux does not replicate user
// pages, so when the resource manager asks for a replica on NUMA node k the service copies
// its data into memory bound to k (mbind), and a worker reads the copy of the node it is
// running on. Copies are never freed while the service runs (a worker may still read
// one); a dropped copy just stops being handed out.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

namespace pimcloud::harness {

constexpr int kMaxNumaNodes = 64;

// The NUMA node of the CPU the calling thread runs on (0 when unknown).
int current_numa_node();
// Number of NUMA nodes the kernel knows (1 without NUMA).
int numa_node_count();

class ReplicatedRegion {
 public:
  // Takes the master copy (stays where it was allocated, first touch).
  explicit ReplicatedRegion(std::vector<std::byte> master);
  ~ReplicatedRegion();
  ReplicatedRegion(const ReplicatedRegion&) = delete;
  ReplicatedRegion& operator=(const ReplicatedRegion&) = delete;

  // Copy the data onto `node`. False with a reason in `error` (no such node, mbind
  // refused, out of memory on the node).
  bool replicate(int node, std::string& error);
  bool drop(int node, std::string& error);
  std::vector<int> replica_nodes() const;

  // The copy local to the calling thread's node, else the master.
  const std::byte* local() const;
  const std::byte* on_node(int node) const;
  std::size_t size() const { return master_.size(); }

 private:
  std::vector<std::byte> master_;
  std::array<std::atomic<const std::byte*>, kMaxNumaNodes> copies_{};
  mutable std::mutex mutex_;
  std::vector<std::pair<void*, std::size_t>> mappings_;  // freed at destruction
};

}  // namespace pimcloud::harness
