// PimLinkRouter: the requester-aware memory-side router of the PIM server.
//
// gem5's classic memory system routes below the point of coherence by address only,
// so a PIM core reaching its own stack and the host reaching that stack would see
// the same latency. This router sits between the membus and the memory owners and
// knows both ends of every access: the source location from the requestor id, the
// target location from the address. Each access pays the route's link latencies and
// is serialised on each link at its bandwidth, both ways. The arithmetic lives in
// link_model.hh; this class only holds and moves packets (like gem5's Bridge).
#ifndef PIMCLOUD_PIM_LINK_ROUTER_HH
#define PIMCLOUD_PIM_LINK_ROUTER_HH

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/addr_range_map.hh"
#include "base/statistics.hh"
#include "mem/packet.hh"
#include "mem/port.hh"
#include "params/PimLinkRouter.hh"
#include "pimcloud/link_model.hh"
#include "pimcloud/ready_queue.hh"
#include "sim/eventq.hh"
#include "sim/sim_object.hh"

namespace gem5
{

class PimCounters;
class System;

class PimLinkRouter : public SimObject
{
  public:
    PARAMS(PimLinkRouter);
    explicit PimLinkRouter(const Params &p);

    Port &getPort(const std::string &if_name, PortID idx = InvalidPortID) override;
    void init() override;
    // Drained once no packet is held and no response is still expected.
    DrainState drain() override;

  private:
    // Packets waiting out their links (ready_queue.hh: same-line requests keep the
    // membus's order).
    using TimedQueue = ::pimcloud::ReadyQueue<PacketPtr>;
    static bool satisfyFromQueue(const TimedQueue &queue, PacketPtr pkt);

    class MemSidePort;

    class CpuSidePort : public ResponsePort
    {
      public:
        CpuSidePort(const std::string &name, PimLinkRouter &router);

        void schedTimingResp(PacketPtr pkt, Tick ready);
        // Tell the membus to resend the request we refused, if any.
        void retryStalledReq();
        bool trySatisfyFunctional(PacketPtr pkt) const;

      protected:
        bool recvTimingReq(PacketPtr pkt) override;
        void recvRespRetry() override;
        Tick recvAtomic(PacketPtr pkt) override;
        Tick recvAtomicBackdoor(PacketPtr pkt, MemBackdoorPtr &backdoor) override;
        void recvFunctional(PacketPtr pkt) override;
        void recvMemBackdoorReq(const MemBackdoorReq &req,
                                MemBackdoorPtr &backdoor) override;
        AddrRangeList getAddrRanges() const override;

      private:
        PimLinkRouter &router;
        TimedQueue responses;
        bool waitingForRespRetry = false;
        bool mustSendRetryReq = false;
        EventFunctionWrapper sendEvent;

        void trySendTiming();
        void scheduleSend();

        friend class PimLinkRouter;
    };

    class MemSidePort : public RequestPort
    {
      public:
        MemSidePort(const std::string &name, PimLinkRouter &router, PortID id);

        // Returns the tick the request will leave at (same-line order may hold it).
        Tick schedTimingReq(PacketPtr pkt, Tick ready, Addr line);
        bool full() const;
        bool trySatisfyFunctional(PacketPtr pkt) const;

      protected:
        bool recvTimingResp(PacketPtr pkt) override;
        void recvReqRetry() override;
        void recvRangeChange() override;

      private:
        PimLinkRouter &router;
        const PortID id;
        TimedQueue requests;
        bool waitingForReqRetry = false;
        EventFunctionWrapper sendEvent;

        void trySendTiming();
        void scheduleSend();

        friend class PimLinkRouter;
    };

    struct LinkStats : public statistics::Group
    {
        LinkStats(statistics::Group *parent, unsigned id, const ::pimcloud::LinkSpec &spec);
        void regStats() override;

        statistics::Scalar packets;
        statistics::Scalar bytes;
        statistics::Scalar queueingDelay;
        statistics::Formula avgQueueingDelay;
        statistics::Histogram queueingDelayDist;
        statistics::Scalar busyTicks;
        statistics::Formula utilisation;
    };

    struct RouterStats : public statistics::Group
    {
        RouterStats(PimLinkRouter &router);
        void regStats() override;

        PimLinkRouter &router;
        statistics::Vector pairRequests;
        statistics::Vector pairReqLatency;
        statistics::Vector pairResponses;
        statistics::Vector pairRespLatency;
        statistics::Formula pairAvgReqLatency;
        statistics::Formula pairAvgRespLatency;
        statistics::Formula pairAvgLatency;
        statistics::Scalar passThrough;
        statistics::Scalar refusedRequests;
        statistics::Scalar lineOrderHolds;
        statistics::Scalar lineOrderTicks;
    };

    System *system;
    PimCounters *counters;  // optional: fed every timing request
    const unsigned numLocations;
    const std::vector<unsigned> targetLocations;
    const unsigned headerBytes;
    const unsigned reqQueueSize;
    const unsigned respQueueSize;

    ::pimcloud::LinkModel model;
    ::pimcloud::RequestorMap requestorMap;
    // Location of each requestor id once looked up; -1 = not yet.
    std::vector<int> requestorLocation;

    CpuSidePort cpuSide;
    std::vector<std::unique_ptr<MemSidePort>> memSide;
    AddrRangeMap<PortID, 3> portMap;
    bool rangesKnown = false;
    unsigned outstandingResponses = 0;

    RouterStats stats;
    std::vector<std::unique_ptr<LinkStats>> linkStats;

    static ::pimcloud::LinkModel buildModel(const Params &p);
    static ::pimcloud::RequestorMap buildRequestorMap(const Params &p);

    unsigned sourceLocation(const PacketPtr pkt);
    PortID findPort(const AddrRange &range, const PacketPtr pkt) const;
    void rebuildPortMap();

    // Packets that take no link time: maintenance and express snoops.
    static bool passesThrough(const PacketPtr pkt);
    // Bytes a packet puts on a link: header, plus its data when it carries some.
    uint64_t wireBytes(const PacketPtr pkt) const;
    // Reserve the links from `from` to `to` for `pkt` entering at `enter`.
    Tick crossLinks(unsigned from, unsigned to, const PacketPtr pkt, Tick enter);

    bool handleTimingReq(PacketPtr pkt);
    void handleTimingResp(PortID port, PacketPtr pkt);
    void reqSent();
    void respSent();
    bool idle() const;
    void checkDrained();
};

} // namespace gem5

#endif // PIMCLOUD_PIM_LINK_ROUTER_HH
