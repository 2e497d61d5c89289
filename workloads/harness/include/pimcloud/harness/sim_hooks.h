// Calls into the simulator: under gem5 each request is bracketed by m5 work_begin /
// work_end and each monitoring interval ends with dump_reset_stats. Natively (or when
// the m5 library was not built) the hooks do nothing, so one binary serves both.
#pragma once

#include <cstdint>
#include <memory>

namespace pimcloud::harness {

class SimHooks {
 public:
  virtual ~SimHooks() = default;
  virtual void work_begin(std::uint64_t request_id, std::uint64_t worker) = 0;
  virtual void work_end(std::uint64_t request_id, std::uint64_t worker) = 0;
  virtual void dump_reset_stats() = 0;
};

class NoSimHooks final : public SimHooks {
 public:
  void work_begin(std::uint64_t, std::uint64_t) override {}
  void work_end(std::uint64_t, std::uint64_t) override {}
  void dump_reset_stats() override {}
};

// Whether this build links the m5-op library (guest/m5's CMake target pimcloud_m5).
bool m5ops_available();

// m5 hooks when the library is linked and either `under_gem5` (--gem5) or guest/m5 finds
// the gem5 backend on the kernel command line; no-ops otherwise. m5 ops are illegal
// instructions outside gem5, so they are never used on a host.
std::unique_ptr<SimHooks> make_sim_hooks(bool under_gem5);

}  // namespace pimcloud::harness
