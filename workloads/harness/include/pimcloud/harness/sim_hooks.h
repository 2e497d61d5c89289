// Calls into the simulator: under gem5 each request is bracketed by m5 work_begin /
// work_end and each monitoring interval ends with dump_reset_stats. Natively (or when
// the m5 library was not built) the hooks do nothing, so one binary serves both.
//
// gem5's work id is the work item *type* (system.work_item_type<N>, N below the
// system's num_work_ids, 16 by default; a larger one is fatal), so every request of a
// service carries the service's work type, not its request id; the thread id is the
// worker index.
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

// gem5's default num_work_ids: work types must stay below it.
inline constexpr std::uint64_t kMaxWorkTypes = 16;

// m5 hooks when the library is linked and either `under_gem5` (--gem5) or guest/m5 finds
// the gem5 backend on the kernel command line; no-ops otherwise. m5 ops are illegal
// instructions outside gem5, so they are never used on a host. Work items are recorded
// whenever the hooks are on; the per-interval stats dumps only with --gem5, so that of
// several services in one run only the one asked dumps.
std::unique_ptr<SimHooks> make_sim_hooks(bool under_gem5, std::uint64_t work_type = 0);

}  // namespace pimcloud::harness
