// PimCounters: the gem5 face of counters_model.hh on the I/O bus, fed by the link router.
#ifndef PIMCLOUD_PIM_COUNTERS_HH
#define PIMCLOUD_PIM_COUNTERS_HH

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "base/statistics.hh"
#include "dev/io_device.hh"
#include "mem/packet.hh"
#include "params/PimCounters.hh"
#include "pimcloud/counters_model.hh"
#include "pimcloud/link_model.hh"

namespace gem5
{

class System;

class PimCounters : public BasicPioDevice
{
  public:
    PARAMS(PimCounters);
    explicit PimCounters(const Params &p);

    Tick read(PacketPtr pkt) override;
    Tick write(PacketPtr pkt) override;

    // The router calls these for every timing request that reaches memory and for its
    // response. requestArrived returns when the request may go on (the throttle).
    Tick requestArrived(PacketPtr pkt, Tick enter);
    void responseLeaving(PacketPtr pkt, Tick leave);

    void serialize(CheckpointOut &cp) const override;
    void unserialize(CheckpointIn &cp) override;

  private:
    struct Outstanding
    {
        std::uint16_t cpu;
        Tick since;
    };

    struct CounterStats : public statistics::Group
    {
        explicit CounterStats(PimCounters &owner);

        statistics::Scalar countedAccesses;
        statistics::Scalar uncountedAccesses;
        statistics::Scalar queries;
        statistics::Scalar throttledRequests;
        statistics::Scalar throttleDelay;
        // The per-CPU miss counters again, as statistics: each stats dump then holds
        // what the guest would read over that interval (seed 003's r_total, sum r_t).
        statistics::Vector cpuMisses;
        statistics::Vector cpuOutstandingTicks;
    };

    // The CPU a packet comes from, or kNoCpu (a cache's own writeback, a device).
    std::uint16_t cpuOf(const PacketPtr pkt);
    std::uint64_t accessOffset(PacketPtr pkt) const;

    System *system;
    ::pimcloud::counters::Device device;
    ::pimcloud::RequestorMap cpuMap;
    std::vector<int> requestorCpu;  // by requestor id, -1 = not looked up yet
    std::unordered_map<PacketPtr, Outstanding> outstanding;
    CounterStats stats;
};

} // namespace gem5

#endif // PIMCLOUD_PIM_COUNTERS_HH
