#include "pimcloud/pim_counters.hh"

#include <exception>
#include <string>

#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/PimCounters.hh"
#include "mem/packet_access.hh"
#include "sim/serialize.hh"
#include "sim/system.hh"

namespace gem5
{

namespace
{

namespace counters = ::pimcloud::counters;

counters::DeviceConfig
deviceConfig(const PimCountersParams &p)
{
    fatal_if(p.range_stacks.size() != p.stack_ranges.size(),
             "%s: range_stacks has %d entries for %d stack_ranges; give the stack of "
             "every range\n", p.name, p.range_stacks.size(), p.stack_ranges.size());
    counters::DeviceConfig c;
    c.stacks.resize(p.stack_nodes.size());
    for (std::size_t i = 0; i < p.stack_ranges.size(); ++i) {
        const AddrRange &r = p.stack_ranges[i];
        fatal_if(p.range_stacks[i] >= c.stacks.size(),
                 "%s: range %s is given stack %d but stack_nodes names only %d stacks\n",
                 p.name, r.to_string(), p.range_stacks[i], c.stacks.size());
        fatal_if(r.start() % (1 << counters::kFrameShift) != 0 ||
                     r.size() % (1 << counters::kFrameShift) != 0,
                 "%s: range %s is not whole 4 KiB frames\n", p.name, r.to_string());
        c.stacks[p.range_stacks[i]].push_back(
            {r.start() >> counters::kFrameShift, r.size() >> counters::kFrameShift});
    }
    c.stackNodes.assign(p.stack_nodes.begin(), p.stack_nodes.end());
    c.cpuPeriods.assign(p.cpu_clocks.begin(), p.cpu_clocks.end());
    c.decayPeriod = p.decay_period;
    c.scanPerFrame = p.scan_time_per_frame;
    c.maxQuery = p.max_query;
    c.throttleLevels = p.throttle_levels;
    c.throttleStep = p.throttle_step;
    if (const auto error = counters::checkConfig(c))
        fatal("%s: %s\n", p.name, *error);
    return c;
}

::pimcloud::RequestorMap
cpuRequestorMap(const PimCountersParams &p)
{
    // Locations are CPU ids; one past the last CPU stands for "no CPU".
    const unsigned cpus = p.cpu_clocks.size();
    try {
        return ::pimcloud::RequestorMap(p.cpu_prefixes, p.cpu_ids, cpus, cpus + 1);
    } catch (const std::exception &e) {
        fatal("%s: %s\n", p.name, e.what());
    }
}

} // namespace

PimCounters::PimCounters(const Params &p)
    : BasicPioDevice(p, counters::blockSize(p.max_query)),
      system(p.system),
      device(deviceConfig(p)),
      cpuMap(cpuRequestorMap(p)),
      stats(*this)
{
    fatal_if(system == nullptr, "%s: needs a system to name requestors\n", name());
    std::uint64_t frames = 0;
    for (std::size_t s = 0; s < device.numStacks(); ++s)
        frames += device.stack(s).frames();
    inform("%s: page counters for %d frames in %d stacks (%d MiB of host memory)\n", name(),
           frames, device.numStacks(),
           frames * counters::StackCounters::bytesPerFrame() >> 20);
}

std::uint16_t
PimCounters::cpuOf(const PacketPtr pkt)
{
    const RequestorID id = pkt->req->requestorId();
    const unsigned none = device.numCpus();
    if (id >= system->maxRequestors())
        return counters::kNoCpu;
    if (id >= requestorCpu.size())
        requestorCpu.resize(system->maxRequestors(), -1);
    int &cpu = requestorCpu[id];
    if (cpu < 0) {
        cpu = int(cpuMap.locate(system->getRequestorName(id)));
        DPRINTF(PimCounters, "requestor %d (%s) is CPU %d\n", id,
                system->getRequestorName(id), cpu == int(none) ? -1 : cpu);
    }
    return cpu == int(none) ? counters::kNoCpu : std::uint16_t(cpu);
}

Tick
PimCounters::requestArrived(PacketPtr pkt, Tick enter)
{
    const std::uint16_t cpu = cpuOf(pkt);
    const bool writes = pkt->isWrite() || pkt->needsWritable();
    if (device.recordAccess(pkt->getAddr(), cpu, writes, enter))
        ++stats.countedAccesses;
    else
        ++stats.uncountedAccesses;
    if (cpu == counters::kNoCpu)
        return enter;
    if (pkt->isRead() && pkt->needsResponse())
        outstanding[pkt] = {cpu, enter};
    const Tick leave = device.bandwidthThrottle().admit(cpu, enter);
    if (leave != enter) {
        ++stats.throttledRequests;
        stats.throttleDelay += leave - enter;
    }
    return leave;
}

void
PimCounters::responseLeaving(PacketPtr pkt, Tick leave)
{
    const auto it = outstanding.find(pkt);
    if (it == outstanding.end())
        return;
    device.missCounters().record(it->second.cpu, leave - it->second.since);
    ++stats.cpuMisses[it->second.cpu];
    stats.cpuOutstandingTicks[it->second.cpu] += leave - it->second.since;
    outstanding.erase(it);
}

std::uint64_t
PimCounters::accessOffset(PacketPtr pkt) const
{
    const Addr offset = pkt->getAddr() - pioAddr;
    panic_if(pkt->getSize() != 8 || offset % 8 != 0,
             "%s: access of %u bytes at offset %#x; registers take aligned 8-byte "
             "accesses (pim_counters_abi.h)\n", name(), pkt->getSize(), offset);
    return offset;
}

Tick
PimCounters::read(PacketPtr pkt)
{
    const std::uint64_t offset = accessOffset(pkt);
    const std::uint64_t value = device.read(offset, curTick());
    DPRINTF(PimCounters, "read %#x: %#x\n", offset, value);
    pkt->setLE<std::uint64_t>(value);
    pkt->makeAtomicResponse();
    return pioDelay;
}

Tick
PimCounters::write(PacketPtr pkt)
{
    const std::uint64_t offset = accessOffset(pkt);
    const std::uint64_t value = pkt->getLE<std::uint64_t>();
    DPRINTF(PimCounters, "write %#x: %#x\n", offset, value);
    if (offset == PIMC_QUERY_CMD)
        ++stats.queries;
    device.write(offset, value, curTick());
    pkt->makeAtomicResponse();
    return pioDelay;
}

void
PimCounters::serialize(CheckpointOut &cp) const
{
    const auto saved = device.saveRegisters();
    paramOut(cp, "decayPeriod", saved.decayPeriod);
    paramOut(cp, "queryN", saved.queryN);
    paramOut(cp, "queryStack", saved.queryStack);
    paramOut(cp, "started", saved.started);
    paramOut(cp, "failed", saved.failed);
    paramOut(cp, "readyAt", saved.readyAt);
    arrayParamOut(cp, "results", saved.results);
    arrayParamOut(cp, "misses", device.missCounters().save());
    arrayParamOut(cp, "throttle", device.bandwidthThrottle().save());
    // Counters sparsely: most frames of a checkpoint made on atomic cores are zero.
    for (std::size_t s = 0; s < device.numStacks(); ++s) {
        const std::vector<std::uint64_t> words = device.stack(s).save();
        std::vector<std::uint64_t> slots, nonzero;
        for (std::size_t i = 0; i < words.size(); ++i) {
            if (words[i] != std::uint64_t(counters::kNoCpu) << 32) {
                slots.push_back(i);
                nonzero.push_back(words[i]);
            }
        }
        arrayParamOut(cp, csprintf("stack%d.slots", s), slots);
        arrayParamOut(cp, csprintf("stack%d.words", s), nonzero);
    }
}

void
PimCounters::unserialize(CheckpointIn &cp)
{
    counters::Device::Saved saved{};
    paramIn(cp, "decayPeriod", saved.decayPeriod);
    paramIn(cp, "queryN", saved.queryN);
    paramIn(cp, "queryStack", saved.queryStack);
    paramIn(cp, "started", saved.started);
    paramIn(cp, "failed", saved.failed);
    paramIn(cp, "readyAt", saved.readyAt);
    arrayParamIn(cp, "results", saved.results);
    device.restoreRegisters(saved);
    std::vector<std::uint64_t> words;
    try {
        arrayParamIn(cp, "misses", words);
        device.missCounters().restore(words);
        arrayParamIn(cp, "throttle", words);
        device.bandwidthThrottle().restore(words);
        for (std::size_t s = 0; s < device.numStacks(); ++s) {
            std::vector<std::uint64_t> slots, nonzero;
            arrayParamIn(cp, csprintf("stack%d.slots", s), slots);
            arrayParamIn(cp, csprintf("stack%d.words", s), nonzero);
            std::vector<std::uint64_t> all(device.stack(s).frames(),
                                           std::uint64_t(counters::kNoCpu) << 32);
            for (std::size_t i = 0; i < slots.size() && i < nonzero.size(); ++i)
                all.at(slots[i]) = nonzero[i];
            device.mutableStack(s).restore(all);
        }
    } catch (const std::exception &e) {
        fatal("%s: the checkpoint's counters do not fit this device (%s); restore it "
              "on the topology it was made with\n", name(), e.what());
    }
}

PimCounters::CounterStats::CounterStats(PimCounters &owner)
    : statistics::Group(&owner),
      ADD_STAT(countedAccesses, statistics::units::Count::get(),
               "Requests that reached a counted stack"),
      ADD_STAT(uncountedAccesses, statistics::units::Count::get(),
               "Requests to memory outside every stack (DDR, legacy ranges)"),
      ADD_STAT(queries, statistics::units::Count::get(),
               "Commands the guest wrote (hottest-frame queries and resets)"),
      ADD_STAT(throttledRequests, statistics::units::Count::get(),
               "CPU requests the bandwidth throttle delayed"),
      ADD_STAT(throttleDelay, statistics::units::Tick::get(),
               "Total ticks the throttle held requests back"),
      ADD_STAT(cpuMisses, statistics::units::Count::get(),
               "Reads of each CPU that reached memory and were answered (by CPU id)"),
      ADD_STAT(cpuOutstandingTicks, statistics::units::Tick::get(),
               "Ticks those reads were outstanding past the caches (by CPU id)")
{
    cpuMisses.init(owner.device.numCpus());
    cpuOutstandingTicks.init(owner.device.numCpus());
}

} // namespace gem5
