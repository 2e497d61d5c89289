#include "pimcloud/pim_halt_guard.hh"

#include <string>

#include "base/trace.hh"
#include "cpu/thread_context.hh"
#include "debug/PimHaltGuard.hh"

namespace gem5
{

PimHaltGuard::SleepListener::SleepListener(PimHaltGuard &guard, std::size_t index)
    : ProbeListenerArgBase<bool>(guard.cpus[index]->getProbeManager(), "Sleeping"),
      guard(guard), index(index)
{
}

void
PimHaltGuard::SleepListener::notify(const bool &sleeping)
{
    if (sleeping)
        guard.scheduleCheck(index);
}

PimHaltGuard::PimHaltGuard(const Params &p)
    : SimObject(p), cpus(p.cpus), recheckCycles(p.recheck_cycles), stats(this)
{
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        checks.push_back(std::make_unique<EventFunctionWrapper>(
            [this, i] { check(i); }, name() + ".check" + std::to_string(i)));
    }
}

void
PimHaltGuard::regProbeListeners()
{
    for (std::size_t i = 0; i < cpus.size(); ++i)
        listeners.push_back(std::make_unique<SleepListener>(*this, i));
}

void
PimHaltGuard::scheduleCheck(std::size_t index)
{
    // Not from inside the CPU's own suspend: the check runs once that has returned.
    EventFunctionWrapper &event = *checks[index];
    if (!event.scheduled())
        schedule(event, cpus[index]->clockEdge(recheckCycles));
}

void
PimHaltGuard::check(std::size_t index)
{
    BaseCPU *cpu = cpus[index];
    if (cpu->switchedOut())
        return;
    ThreadContext *tc = cpu->getContext(0);
    if (tc->status() != ThreadContext::Suspended || !cpu->checkInterrupts(0))
        return;
    DPRINTF(PimHaltGuard, "%s slept with an interrupt pending: waking it\n",
            cpu->name());
    ++stats.wakeups;
    cpu->wakeup(0);
}

PimHaltGuard::GuardStats::GuardStats(statistics::Group *parent)
    : statistics::Group(parent),
      ADD_STAT(wakeups, statistics::units::Count::get(),
               "CPUs woken because they went to sleep with an interrupt pending")
{
}

} // namespace gem5
