#include "pimcloud/pim_link_router.hh"

#include <algorithm>
#include <exception>
#include <iterator>

#include "base/cprintf.hh"
#include "base/logging.hh"
#include "base/trace.hh"
#include "debug/PimLinkRouter.hh"
#include "pimcloud/pim_counters.hh"
#include "sim/stats.hh"
#include "sim/system.hh"

namespace gem5
{

namespace
{

std::string
pairName(unsigned src, unsigned dst)
{
    return csprintf("from%d_to%d", src, dst);
}

} // namespace

// ---------------------------------------------------------------------------
// Construction

::pimcloud::LinkModel
PimLinkRouter::buildModel(const Params &p)
{
    const std::size_t links = p.link_latency.size();
    fatal_if(p.link_bandwidth.size() != links || p.link_src.size() != links ||
                 p.link_dst.size() != links,
             "%s: link_latency, link_bandwidth, link_src and link_dst must have one "
             "entry per link, got %d, %d, %d and %d entries\n",
             p.name, links, p.link_bandwidth.size(), p.link_src.size(), p.link_dst.size());
    std::vector<::pimcloud::LinkSpec> specs;
    for (std::size_t i = 0; i < links; ++i) {
        // gem5 hands MemoryBandwidth params over as ticks per byte (0 = unlimited).
        specs.push_back({p.link_src[i], p.link_dst[i], p.link_latency[i],
                         static_cast<double>(p.link_bandwidth[i])});
    }
    try {
        return ::pimcloud::LinkModel(::pimcloud::RouteTable(
            p.num_locations, std::move(specs), p.route_offsets, p.route_links));
    } catch (const std::exception &e) {
        fatal("%s: %s\n", p.name, e.what());
    }
}

::pimcloud::RequestorMap
PimLinkRouter::buildRequestorMap(const Params &p)
{
    try {
        return ::pimcloud::RequestorMap(p.requestor_prefixes, p.requestor_locations,
                                        p.default_location, p.num_locations);
    } catch (const std::exception &e) {
        fatal("%s: %s\n", p.name, e.what());
    }
}

PimLinkRouter::PimLinkRouter(const Params &p)
    : SimObject(p),
      system(p.system),
      counters(p.counters),
      numLocations(p.num_locations),
      targetLocations(p.target_locations),
      headerBytes(p.header_bytes),
      reqQueueSize(p.req_queue_size),
      respQueueSize(p.resp_queue_size),
      model(buildModel(p)),
      requestorMap(buildRequestorMap(p)),
      cpuSide(p.name + ".cpu_side", *this),
      stats(*this)
{
    const unsigned ports = p.port_mem_side_connection_count;
    fatal_if(ports == 0, "%s: mem_side has no connections; connect one port per "
             "memory owner\n", name());
    fatal_if(targetLocations.size() != ports,
             "%s: target_locations has %d entries but %d mem_side ports are connected; "
             "give the location of every memory owner in port order\n",
             name(), targetLocations.size(), ports);
    for (unsigned i = 0; i < ports; ++i) {
        fatal_if(targetLocations[i] >= numLocations,
                 "%s: target_locations[%d] = %d is not below num_locations %d\n",
                 name(), i, targetLocations[i], numLocations);
        memSide.emplace_back(std::make_unique<MemSidePort>(
            csprintf("%s.mem_side[%d]", name(), i), *this, i));
    }
    fatal_if(reqQueueSize == 0 || respQueueSize == 0,
             "%s: req_queue_size and resp_queue_size must be at least 1\n", name());
    fatal_if(system == nullptr, "%s: needs a system to name requestors\n", name());

    const auto &table = model.table();
    for (unsigned id = 0; id < table.numLinks(); ++id)
        linkStats.emplace_back(std::make_unique<LinkStats>(this, id, table.link(id)));
}

Port &
PimLinkRouter::getPort(const std::string &if_name, PortID idx)
{
    if (if_name == "cpu_side")
        return cpuSide;
    if (if_name == "mem_side" && idx >= 0 && std::size_t(idx) < memSide.size())
        return *memSide[idx];
    return SimObject::getPort(if_name, idx);
}

void
PimLinkRouter::init()
{
    fatal_if(!cpuSide.isConnected(),
             "%s: cpu_side is not connected; connect it to the membus mem_side_ports\n",
             name());
    for (const auto &port : memSide)
        fatal_if(!port->isConnected(), "%s is not connected\n", port->name());
    rebuildPortMap();
    cpuSide.sendRangeChange();
}

void
PimLinkRouter::rebuildPortMap()
{
    portMap.clear();
    for (std::size_t i = 0; i < memSide.size(); ++i) {
        for (const AddrRange &r : memSide[i]->getAddrRanges()) {
            fatal_if(portMap.insert(r, PortID(i)) == portMap.end(),
                     "%s: range %s of %s overlaps the range of another memory owner; "
                     "give every mem_side port its own addresses\n",
                     name(), r.to_string(), memSide[i]->getPeer().name());
        }
    }
    rangesKnown = true;
}

PortID
PimLinkRouter::findPort(const AddrRange &range, const PacketPtr pkt) const
{
    auto it = portMap.contains(range);
    fatal_if(it == portMap.end(),
             "%s: no memory owner holds %s (%s); the membus sent an address outside "
             "the ranges of the mem_side ports\n",
             name(), range.to_string(), pkt ? pkt->print() : std::string("backdoor"));
    return it->second;
}

// ---------------------------------------------------------------------------
// Link arithmetic glue

unsigned
PimLinkRouter::sourceLocation(const PacketPtr pkt)
{
    const RequestorID id = pkt->req->requestorId();
    if (id >= system->maxRequestors())
        return requestorMap.defaultLocation();
    if (id >= requestorLocation.size())
        requestorLocation.resize(system->maxRequestors(), -1);
    int &loc = requestorLocation[id];
    if (loc < 0) {
        const std::string requestor = system->getRequestorName(id);
        loc = int(requestorMap.locate(requestor));
        DPRINTF(PimLinkRouter, "requestor %d (%s) is at location %d\n", id, requestor,
                loc);
    }
    return unsigned(loc);
}

bool
PimLinkRouter::passesThrough(const PacketPtr pkt)
{
    return pkt->isExpressSnoop() || pkt->cacheResponding() ||
           pkt->req->isCacheMaintenance();
}

uint64_t
PimLinkRouter::wireBytes(const PacketPtr pkt) const
{
    return headerBytes + (pkt->hasData() ? pkt->getSize() : 0);
}

Tick
PimLinkRouter::crossLinks(unsigned from, unsigned to, const PacketPtr pkt, Tick enter)
{
    const uint64_t bytes = wireBytes(pkt);
    return model.traverse(from, to, bytes, enter, [&](const ::pimcloud::Hop &hop) {
        LinkStats &ls = *linkStats[hop.link];
        ++ls.packets;
        ls.bytes += bytes;
        ls.queueingDelay += hop.queueing;
        ls.queueingDelayDist.sample(hop.queueing);
        ls.busyTicks += hop.serialisation;
        DPRINTF(PimLinkRouter, "  link %d: %d bytes, queued %d, on wire %d\n", hop.link,
                bytes, hop.queueing, hop.serialisation);
    });
}

// ---------------------------------------------------------------------------
// Timing requests: cpu_side -> links -> mem_side

bool
PimLinkRouter::handleTimingReq(PacketPtr pkt)
{
    // After refusing a request we promised a retry; until then refuse the rest
    // (as gem5's Bridge does: some requestors send again without waiting).
    if (cpuSide.mustSendRetryReq)
        return false;

    const PortID port = findPort(pkt->getAddrRange(), pkt);
    const bool expects_response = pkt->needsResponse() && !pkt->cacheResponding();
    if (memSide[port]->full() ||
        (expects_response && outstandingResponses >= respQueueSize)) {
        DPRINTF(PimLinkRouter, "refusing %s: queues full\n", pkt->print());
        ++stats.refusedRequests;
        cpuSide.mustSendRetryReq = true;
        return false;
    }
    if (expects_response)
        ++outstandingResponses; // space for its response is now guaranteed

    // The packet only gets here after the membus's own header and payload delay.
    const Tick enter = curTick() + pkt->headerDelay + pkt->payloadDelay;
    pkt->headerDelay = pkt->payloadDelay = 0;

    Tick ready = enter;
    if (passesThrough(pkt)) {
        ++stats.passThrough;
    } else {
        const unsigned src = sourceLocation(pkt);
        const unsigned dst = targetLocations[port];
        DPRINTF(PimLinkRouter, "request %s: location %d -> %d\n", pkt->print(), src, dst);
        // The counters see the request as it reaches memory; their throttle may hold
        // it back before it takes the links.
        const Tick admitted = counters ? counters->requestArrived(pkt, enter) : enter;
        ready = crossLinks(src, dst, pkt, admitted);
        const unsigned pair = src * numLocations + dst;
        ++stats.pairRequests[pair];
        stats.pairReqLatency[pair] += ready - enter;
    }
    // Not before an earlier request to the same line (ready_queue.hh says why); what
    // passes through carries no data memory keeps and waits for nothing.
    const Addr line = passesThrough(pkt) ? TimedQueue::kNoLine
                                         : pkt->getBlockAddr(system->cacheLineSize());
    const Tick sent = memSide[port]->schedTimingReq(pkt, ready, line);
    if (sent != ready) {
        ++stats.lineOrderHolds;
        stats.lineOrderTicks += sent - ready;
    }
    return true;
}

void
PimLinkRouter::reqSent()
{
    checkDrained();
    cpuSide.retryStalledReq();
}

// ---------------------------------------------------------------------------
// Timing responses: mem_side -> reverse route -> cpu_side

void
PimLinkRouter::handleTimingResp(PortID port, PacketPtr pkt)
{
    const Tick enter = curTick() + pkt->headerDelay + pkt->payloadDelay;
    pkt->headerDelay = pkt->payloadDelay = 0;

    Tick ready = enter;
    if (!passesThrough(pkt)) {
        const unsigned src = sourceLocation(pkt); // the requestor's location
        const unsigned owner = targetLocations[port];
        DPRINTF(PimLinkRouter, "response %s: location %d -> %d\n", pkt->print(), owner,
                src);
        ready = crossLinks(owner, src, pkt, enter);
        const unsigned pair = src * numLocations + owner;
        ++stats.pairResponses[pair];
        stats.pairRespLatency[pair] += ready - enter;
        if (counters)
            counters->responseLeaving(pkt, ready);
    }
    cpuSide.schedTimingResp(pkt, ready);
}

void
PimLinkRouter::respSent()
{
    panic_if(outstandingResponses == 0, "%s: more responses than requests\n", name());
    --outstandingResponses;
    checkDrained();
    cpuSide.retryStalledReq();
}

bool
PimLinkRouter::idle() const
{
    if (outstandingResponses != 0 || !cpuSide.responses.empty())
        return false;
    for (const auto &port : memSide)
        if (!port->requests.empty())
            return false;
    return true;
}

DrainState
PimLinkRouter::drain()
{
    return idle() ? DrainState::Drained : DrainState::Draining;
}

void
PimLinkRouter::checkDrained()
{
    if (drainState() == DrainState::Draining && idle())
        signalDrainDone();
}

// ---------------------------------------------------------------------------
// TimedQueue

bool
PimLinkRouter::satisfyFromQueue(const TimedQueue &queue, PacketPtr pkt)
{
    return queue.anyNewestFirst([pkt](PacketPtr queued) {
        if (!pkt->trySatisfyFunctional(queued))
            return false;
        pkt->makeResponse();
        return true;
    });
}

// ---------------------------------------------------------------------------
// CpuSidePort

PimLinkRouter::CpuSidePort::CpuSidePort(const std::string &name, PimLinkRouter &router)
    : ResponsePort(name), router(router), sendEvent([this] { trySendTiming(); }, name)
{}

bool
PimLinkRouter::CpuSidePort::recvTimingReq(PacketPtr pkt)
{
    return router.handleTimingReq(pkt);
}

void
PimLinkRouter::CpuSidePort::schedTimingResp(PacketPtr pkt, Tick ready)
{
    responses.insert(pkt, ready);
    scheduleSend();
}

void
PimLinkRouter::CpuSidePort::scheduleSend()
{
    if (waitingForRespRetry || responses.empty())
        return;
    const Tick when = std::max(responses.front().ready, curTick());
    if (!sendEvent.scheduled())
        router.schedule(sendEvent, when);
    else if (when < sendEvent.when())
        router.reschedule(sendEvent, when);
}

void
PimLinkRouter::CpuSidePort::trySendTiming()
{
    if (responses.empty() || responses.front().ready > curTick()) {
        scheduleSend();
        return;
    }
    if (sendTimingResp(responses.front().item)) {
        responses.popFront();
        scheduleSend();
        router.respSent();
    } else {
        waitingForRespRetry = true; // the membus calls recvRespRetry
    }
}

void
PimLinkRouter::CpuSidePort::recvRespRetry()
{
    if (!waitingForRespRetry)
        return;
    waitingForRespRetry = false;
    trySendTiming();
}

void
PimLinkRouter::CpuSidePort::retryStalledReq()
{
    if (mustSendRetryReq) {
        mustSendRetryReq = false;
        sendRetryReq();
    }
}

Tick
PimLinkRouter::CpuSidePort::recvAtomic(PacketPtr pkt)
{
    MemBackdoorPtr unused = nullptr;
    return recvAtomicBackdoor(pkt, unused);
}

Tick
PimLinkRouter::CpuSidePort::recvAtomicBackdoor(PacketPtr pkt, MemBackdoorPtr &backdoor)
{
    // Atomic mode has no contention: charge each way's unloaded route latency.
    const PortID port = router.findPort(pkt->getAddrRange(), pkt);
    MemSidePort &mem = *router.memSide[port];
    if (passesThrough(pkt))
        return mem.sendAtomicBackdoor(pkt, backdoor);
    const unsigned src = router.sourceLocation(pkt);
    const unsigned dst = router.targetLocations[port];
    const auto &table = router.model.table();
    Tick latency = table.unloadedLatency(src, dst, router.wireBytes(pkt));
    latency += mem.sendAtomicBackdoor(pkt, backdoor);
    if (pkt->isResponse())
        latency += table.unloadedLatency(dst, src, router.wireBytes(pkt));
    return latency;
}

void
PimLinkRouter::CpuSidePort::recvFunctional(PacketPtr pkt)
{
    // Data still inside the router (queued writes, read responses) is the newest.
    pkt->pushLabel(name());
    bool done = PimLinkRouter::satisfyFromQueue(responses, pkt);
    for (auto it = router.memSide.begin(); !done && it != router.memSide.end(); ++it)
        done = (*it)->trySatisfyFunctional(pkt);
    pkt->popLabel();
    if (!done)
        router.memSide[router.findPort(pkt->getAddrRange(), pkt)]->sendFunctional(pkt);
}

void
PimLinkRouter::CpuSidePort::recvMemBackdoorReq(const MemBackdoorReq &req,
                                               MemBackdoorPtr &backdoor)
{
    auto it = router.portMap.contains(req.range());
    if (it != router.portMap.end())
        router.memSide[it->second]->sendMemBackdoorReq(req, backdoor);
}

AddrRangeList
PimLinkRouter::CpuSidePort::getAddrRanges() const
{
    AddrRangeList ranges;
    for (const auto &port : router.memSide)
        ranges.splice(ranges.end(), port->getAddrRanges());
    return ranges;
}

// ---------------------------------------------------------------------------
// MemSidePort

PimLinkRouter::MemSidePort::MemSidePort(const std::string &name, PimLinkRouter &router,
                                        PortID id)
    : RequestPort(name, id), router(router), id(id),
      sendEvent([this] { trySendTiming(); }, name)
{}

bool
PimLinkRouter::MemSidePort::full() const
{
    return requests.size() >= router.reqQueueSize;
}

Tick
PimLinkRouter::MemSidePort::schedTimingReq(PacketPtr pkt, Tick ready, Addr line)
{
    const Tick sent = requests.insert(pkt, ready, line);
    scheduleSend();
    return sent;
}

void
PimLinkRouter::MemSidePort::scheduleSend()
{
    if (waitingForReqRetry || requests.empty())
        return;
    const Tick when = std::max(requests.front().ready, curTick());
    if (!sendEvent.scheduled())
        router.schedule(sendEvent, when);
    else if (when < sendEvent.when())
        router.reschedule(sendEvent, when);
}

void
PimLinkRouter::MemSidePort::trySendTiming()
{
    if (requests.empty() || requests.front().ready > curTick()) {
        scheduleSend();
        return;
    }
    if (sendTimingReq(requests.front().item)) {
        requests.popFront();
        scheduleSend();
        router.reqSent();
    } else {
        waitingForReqRetry = true; // the memory calls recvReqRetry
    }
}

void
PimLinkRouter::MemSidePort::recvReqRetry()
{
    if (!waitingForReqRetry)
        return;
    waitingForReqRetry = false;
    trySendTiming();
}

bool
PimLinkRouter::MemSidePort::recvTimingResp(PacketPtr pkt)
{
    // Space was reserved when the request came in, so a response always fits.
    router.handleTimingResp(id, pkt);
    return true;
}

bool
PimLinkRouter::MemSidePort::trySatisfyFunctional(PacketPtr pkt) const
{
    return PimLinkRouter::satisfyFromQueue(requests, pkt);
}

void
PimLinkRouter::MemSidePort::recvRangeChange()
{
    // Before init() the map is built from scratch there; afterwards pass changes on.
    if (!router.rangesKnown)
        return;
    router.rebuildPortMap();
    router.cpuSide.sendRangeChange();
}

// ---------------------------------------------------------------------------
// Statistics

PimLinkRouter::LinkStats::LinkStats(statistics::Group *parent, unsigned id,
                                    const ::pimcloud::LinkSpec &spec)
    : statistics::Group(parent, csprintf("link%d", id).c_str()),
      ADD_STAT(packets, statistics::units::Count::get(),
               csprintf("Packets serialised on link %d (location %d -> %d)", id, spec.src,
                        spec.dst)
                   .c_str()),
      ADD_STAT(bytes, statistics::units::Byte::get(),
               "Bytes serialised on the link (headers and payloads)"),
      ADD_STAT(queueingDelay, statistics::units::Tick::get(),
               "Total ticks packets waited for the link to be free"),
      ADD_STAT(avgQueueingDelay,
               statistics::units::Rate<statistics::units::Tick,
                                       statistics::units::Count>::get(),
               "Average ticks a packet waited for the link"),
      ADD_STAT(queueingDelayDist, statistics::units::Tick::get(),
               "Distribution of the wait for the link per packet"),
      ADD_STAT(busyTicks, statistics::units::Tick::get(),
               "Ticks the link spent serialising packets"),
      ADD_STAT(utilisation, statistics::units::Ratio::get(),
               "Fraction of the simulated time the link was busy (busyTicks/simTicks)")
{}

void
PimLinkRouter::LinkStats::regStats()
{
    statistics::Group::regStats();
    queueingDelayDist.init(16);
    avgQueueingDelay = queueingDelay / packets;
    utilisation = busyTicks / simTicks;
}

PimLinkRouter::RouterStats::RouterStats(PimLinkRouter &router)
    : statistics::Group(&router),
      router(router),
      ADD_STAT(pairRequests, statistics::units::Count::get(),
               "Requests per (source location, target location) pair"),
      ADD_STAT(pairReqLatency, statistics::units::Tick::get(),
               "Total ticks the links added to requests, per pair"),
      ADD_STAT(pairResponses, statistics::units::Count::get(),
               "Responses per (source location, target location) pair"),
      ADD_STAT(pairRespLatency, statistics::units::Tick::get(),
               "Total ticks the links added to responses, per pair"),
      ADD_STAT(pairAvgReqLatency,
               statistics::units::Rate<statistics::units::Tick,
                                       statistics::units::Count>::get(),
               "Average ticks the links added to a request, per pair"),
      ADD_STAT(pairAvgRespLatency,
               statistics::units::Rate<statistics::units::Tick,
                                       statistics::units::Count>::get(),
               "Average ticks the links added to a response, per pair"),
      ADD_STAT(pairAvgLatency,
               statistics::units::Rate<statistics::units::Tick,
                                       statistics::units::Count>::get(),
               "Average ticks the links added to a round trip, per pair"),
      ADD_STAT(passThrough, statistics::units::Count::get(),
               "Requests passed through without link time (maintenance, express snoops)"),
      ADD_STAT(refusedRequests, statistics::units::Count::get(),
               "Requests refused because a queue was full (the membus retries them)"),
      ADD_STAT(lineOrderHolds, statistics::units::Count::get(),
               "Requests held back behind an earlier request to the same line on a "
               "slower route (they would have overtaken it)"),
      ADD_STAT(lineOrderTicks, statistics::units::Tick::get(),
               "Total ticks requests were held back to keep the same-line order")
{}

void
PimLinkRouter::RouterStats::regStats()
{
    statistics::Group::regStats();
    const unsigned n = router.numLocations;
    for (statistics::Vector *v :
         {&pairRequests, &pairReqLatency, &pairResponses, &pairRespLatency})
        v->init(n * n);
    pairAvgReqLatency = pairReqLatency / pairRequests;
    pairAvgRespLatency = pairRespLatency / pairResponses;
    pairAvgLatency = pairAvgReqLatency + pairAvgRespLatency;
    for (unsigned src = 0; src < n; ++src) {
        for (unsigned dst = 0; dst < n; ++dst) {
            const unsigned i = src * n + dst;
            const std::string name = pairName(src, dst);
            pairRequests.subname(i, name);
            pairReqLatency.subname(i, name);
            pairResponses.subname(i, name);
            pairRespLatency.subname(i, name);
            pairAvgReqLatency.subname(i, name);
            pairAvgRespLatency.subname(i, name);
            pairAvgLatency.subname(i, name);
        }
    }
    for (statistics::Formula *f : {&pairAvgReqLatency, &pairAvgRespLatency, &pairAvgLatency})
        f->flags(statistics::nonan);
}

} // namespace gem5
