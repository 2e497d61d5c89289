# The requester-aware memory-side router: it sits below the point of coherence,
# between the membus and the memory controllers, and charges every access the SerDes
# links between the requestor's location and the target memory's location.
# Locations: 0 = host socket, 1..M = stacks. All link and route tables come from
# the topology model (pimcloud.topology.interconnect).

from m5.params import (
    NULL,
    Param,
    ResponsePort,
    VectorParam,
    VectorRequestPort,
)
from m5.proxy import Parent
from m5.SimObject import SimObject


class PimLinkRouter(SimObject):
    type = "PimLinkRouter"
    cxx_class = "gem5::PimLinkRouter"
    cxx_header = "pimcloud/pim_link_router.hh"

    cpu_side = ResponsePort("from the membus (below the point of coherence)")
    mem_side = VectorRequestPort(
        "to the memory owners, one per port (a MemCtrl per stack, DDR, ...)"
    )
    system = Param.System(Parent.any, "system whose requestor names are read")

    num_locations = Param.Unsigned(
        "locations: 0 = host socket, 1..M = stacks, M+1 = far memory when there is one")
    target_locations = VectorParam.Unsigned("location of each mem_side port, in port order")
    requestor_prefixes = VectorParam.String(
        [], "requestor name prefixes; the longest matching prefix wins"
    )
    requestor_locations = VectorParam.Unsigned([], "location of each requestor prefix")
    default_location = Param.Unsigned(0, "location of requestors no prefix matches")

    link_latency = VectorParam.Latency([], "propagation latency of each link")
    link_bandwidth = VectorParam.MemoryBandwidth(
        [], "bandwidth of each directed link (one direction)"
    )
    link_src = VectorParam.Unsigned([], "source location of each link")
    link_dst = VectorParam.Unsigned([], "destination location of each link")

    route_offsets = VectorParam.Unsigned(
        "CSR offsets: route a->b is route_links[off[a*n+b]:off[a*n+b+1]]"
    )
    route_links = VectorParam.Unsigned([], "directed link ids, in path order")

    header_bytes = Param.Unsigned(16, "bytes of header every packet carries")
    req_queue_size = Param.Unsigned(
        32, "requests held per mem_side port before the membus must retry"
    )
    resp_queue_size = Param.Unsigned(
        64, "responses held (reserved per request) before requests are refused"
    )
    counters = Param.PimCounters(
        NULL, "hardware counters fed every timing request (scons-extra PimCounters)"
    )
