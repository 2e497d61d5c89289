// PimHaltGuard: wakes a CPU that went to sleep with a deliverable interrupt pending
// (see PimHaltGuard.py for the race in gem5's x86 HLT that leaves it asleep).
#ifndef PIMCLOUD_PIM_HALT_GUARD_HH
#define PIMCLOUD_PIM_HALT_GUARD_HH

#include <cstddef>
#include <memory>
#include <vector>

#include "base/statistics.hh"
#include "cpu/base.hh"
#include "params/PimHaltGuard.hh"
#include "sim/eventq.hh"
#include "sim/probe/probe.hh"
#include "sim/sim_object.hh"

namespace gem5
{

class PimHaltGuard : public SimObject
{
  public:
    PARAMS(PimHaltGuard);
    explicit PimHaltGuard(const Params &p);

    // Listens to every CPU's "Sleeping" probe point (BaseCPU::suspendContext).
    void regProbeListeners() override;

  private:
    class SleepListener : public ProbeListenerArgBase<bool>
    {
      public:
        SleepListener(PimHaltGuard &guard, std::size_t index);
        void notify(const bool &sleeping) override;

      private:
        PimHaltGuard &guard;
        std::size_t index;
    };

    void scheduleCheck(std::size_t index);
    void check(std::size_t index);

    std::vector<BaseCPU *> cpus;
    Cycles recheckCycles;
    std::vector<std::unique_ptr<SleepListener>> listeners;
    std::vector<std::unique_ptr<EventFunctionWrapper>> checks;

    struct GuardStats : public statistics::Group
    {
        explicit GuardStats(statistics::Group *parent);
        statistics::Scalar wakeups;
    } stats;
};

} // namespace gem5

#endif // PIMCLOUD_PIM_HALT_GUARD_HH
