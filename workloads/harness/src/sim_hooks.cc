#include "pimcloud/harness/sim_hooks.h"

#include <stdexcept>

#ifdef PIMCLOUD_HAVE_M5OPS
#include "m5ops.h"  // guest/m5
#endif

namespace pimcloud::harness {

#ifdef PIMCLOUD_HAVE_M5OPS
namespace {
class M5Hooks final : public SimHooks {
 public:
  M5Hooks(std::uint64_t work_type, bool dumps) : work_type_(work_type), dumps_(dumps) {}
  void work_begin(std::uint64_t, std::uint64_t worker) override {
    m5_work_begin(work_type_, worker);
  }
  void work_end(std::uint64_t, std::uint64_t worker) override {
    m5_work_end(work_type_, worker);
  }
  void dump_reset_stats() override {
    if (dumps_) m5_dump_reset_stats(0, 0);
  }

 private:
  std::uint64_t work_type_;
  bool dumps_;
};
}  // namespace
bool m5ops_available() { return true; }
#else
bool m5ops_available() { return false; }
#endif

std::unique_ptr<SimHooks> make_sim_hooks(bool under_gem5, std::uint64_t work_type) {
  // work_type comes from parse_options, which keeps it below kMaxWorkTypes.
#ifdef PIMCLOUD_HAVE_M5OPS
  // Also on when the guest's kernel command line says gem5 (pimcloud.backend=gem5).
  if (under_gem5 || m5_backend() == M5_BACKEND_GEM5) {
    return std::make_unique<M5Hooks>(work_type, under_gem5);
  }
#else
  (void)work_type;
  if (under_gem5) {
    throw std::runtime_error(
        "--gem5 asked for m5 ops but this harness was built without guest/m5's m5ops "
        "library; build guest/m5 first, then rebuild the workloads");
  }
#endif
  return std::make_unique<NoSimHooks>();
}

}  // namespace pimcloud::harness
