#include "pimcloud/harness/sim_hooks.h"

#include <stdexcept>

#ifdef PIMCLOUD_HAVE_M5OPS
#include "m5ops.h"  // guest/m5: work ids are the request id and the worker index
#endif

namespace pimcloud::harness {

#ifdef PIMCLOUD_HAVE_M5OPS
namespace {
class M5Hooks final : public SimHooks {
 public:
  void work_begin(std::uint64_t id, std::uint64_t worker) override {
    m5_work_begin(id, worker);
  }
  void work_end(std::uint64_t id, std::uint64_t worker) override { m5_work_end(id, worker); }
  void dump_reset_stats() override { m5_dump_reset_stats(0, 0); }
};
}  // namespace
bool m5ops_available() { return true; }
#else
bool m5ops_available() { return false; }
#endif

std::unique_ptr<SimHooks> make_sim_hooks(bool under_gem5) {
#ifdef PIMCLOUD_HAVE_M5OPS
  // Also on when the guest's kernel command line says gem5 (pimcloud.backend=gem5).
  if (under_gem5 || m5_backend() == M5_BACKEND_GEM5) return std::make_unique<M5Hooks>();
#else
  if (under_gem5) {
    throw std::runtime_error(
        "--gem5 asked for m5 ops but this harness was built without guest/m5's m5ops "
        "library; build guest/m5 first, then rebuild the workloads");
  }
#endif
  return std::make_unique<NoSimHooks>();
}

}  // namespace pimcloud::harness
