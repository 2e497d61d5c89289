"""PimLinkRouter in a real gem5 run: two traffic generators, one at the host socket
and one on stack 1, read from memories on stack 1 and stack 2 through the router.

Run with a gem5.opt built with scons-extra (EXTRAS):
    gem5.opt [--outdir DIR] scons-extra/tests/router_two_stacks.py [--scenario NAME]

Scenarios:
  latency  light read traffic; every (source, target) pair must see the latency of its
           configured route and nothing else, so the pairs differ as the links do.
  stress   traffic far beyond the link bandwidth, reads and writes; flow control must
           carry every packet (no deadlock, responses match requests) and the busiest
           links must be nearly saturated but never above 100%.

Exits 0 and prints "PASS <scenario>" when every check holds, else prints the failures
and exits 1. Expected values are computed from the configuration below.
"""

import argparse
import math
import os
import re
import sys

import m5
from m5.objects import (
    AddrRange,
    PimLinkRouter,
    PyTrafficGen,
    Root,
    SimpleMemory,
    SrcClockDomain,
    System,
    SystemXBar,
    VoltageDomain,
)
from m5.params import MemoryBandwidth
from m5.ticks import fromSeconds

# Locations: 0 = host socket, 1 = stack 1, 2 = stack 2.
NUM_LOCATIONS = 3
# Directed links (src, dst, one-way latency in ns); host-stack2 is far on purpose.
LINKS = [(0, 1, 5), (1, 0, 5), (0, 2, 20), (2, 0, 20), (1, 2, 10), (2, 1, 10)]
# Light traffic sees fast links; the stress scenario gets slow links to saturate them.
LINK_BANDWIDTH = {"latency": "80GB/s", "stress": "8GB/s"}
HEADER_BYTES = 16
LINE = 64
MEM_SIZE = 64 * 1024 * 1024
# Memory owners in mem_side port order and their locations.
MEMORIES = [("mem_stack1", 1), ("mem_stack2", 2)]
# Requestors and their locations.
GENERATORS = [("host_gen", 0), ("stack1_gen", 1)]


def direct_route_csr():
    """Every pair of different locations uses its direct link."""
    index = {(s, d): i for i, (s, d, _) in enumerate(LINKS)}
    offsets, links = [0], []
    for a in range(NUM_LOCATIONS):
        for b in range(NUM_LOCATIONS):
            if a != b:
                links.append(index[(a, b)])
            offsets.append(len(links))
    return offsets, links


def build(scenario):
    system = System()
    system.clk_domain = SrcClockDomain(clock="1GHz", voltage_domain=VoltageDomain())
    system.mem_mode = "timing"
    system.mem_ranges = [AddrRange(i * MEM_SIZE, size=MEM_SIZE) for i in range(len(MEMORIES))]
    system.membus = SystemXBar()
    system.system_port = system.membus.cpu_side_ports

    offsets, route_links = direct_route_csr()
    system.router = PimLinkRouter(
        num_locations=NUM_LOCATIONS,
        target_locations=[loc for _, loc in MEMORIES],
        requestor_prefixes=[f"system.{name}" for name, _ in GENERATORS],
        requestor_locations=[loc for _, loc in GENERATORS],
        default_location=0,
        link_latency=[f"{ns}ns" for _, _, ns in LINKS],
        link_bandwidth=[LINK_BANDWIDTH[scenario]] * len(LINKS),
        link_src=[s for s, _, _ in LINKS],
        link_dst=[d for _, d, _ in LINKS],
        route_offsets=offsets,
        route_links=route_links,
        header_bytes=HEADER_BYTES,
    )
    system.membus.mem_side_ports = system.router.cpu_side

    memories = []
    for i, (name, _) in enumerate(MEMORIES):
        # A fast memory keeps it out of the measured latency and makes the links
        # the bottleneck under stress.
        mem = SimpleMemory(range=system.mem_ranges[i], latency="30ns", bandwidth="1000GB/s")
        setattr(system, name, mem)
        mem.port = system.router.mem_side
        memories.append(mem)

    generators = []
    for name, _ in GENERATORS:
        gen = PyTrafficGen()
        setattr(system, name, gen)
        gen.port = system.membus.cpu_side_ports
        generators.append(gen)
    return system, generators


def read_stats(path):
    """First dump of stats.txt as {name: value}."""
    values = {}
    with open(path) as f:
        for line in f:
            if line.startswith("---------- End"):
                break
            m = re.match(r"^(\S+)\s+(-?[0-9.eE+-]+|nan|inf)\s", line)
            if m:
                values[m.group(1)] = float(m.group(2))
    return values


def stat(values, name):
    return values.get(f"system.router.{name}", 0.0)


def pair(src, dst):
    return f"from{src}_to{dst}"


def link_id(src, dst):
    return next(i for i, (s, d, _) in enumerate(LINKS) if (s, d) == (src, dst))


def check_latency(values, tpb, failures):
    def unloaded(src, dst, nbytes):
        if src == dst:
            return 0
        ns = LINKS[link_id(src, dst)][2]
        return fromSeconds(ns * 1e-9) + math.ceil(nbytes * tpb - 1e-9)

    pairs = [(g, m) for _, g in GENERATORS for _, m in MEMORIES]
    round_trip = {}
    for src, dst in pairs:
        name = pair(src, dst)
        requests = stat(values, f"pairRequests::{name}")
        if requests < 10:
            failures.append(f"{name}: only {requests} requests; traffic did not reach it")
            continue
        expect_req = unloaded(src, dst, HEADER_BYTES)
        expect_resp = unloaded(dst, src, HEADER_BYTES + LINE)
        req = stat(values, f"pairAvgReqLatency::{name}")
        resp = stat(values, f"pairAvgRespLatency::{name}")
        round_trip[(src, dst)] = stat(values, f"pairAvgLatency::{name}")
        print(
            f"{name}: {int(requests)} requests, request {req:.0f} ticks "
            f"(route {expect_req}), response {resp:.0f} ticks (route {expect_resp})"
        )
        # Light traffic: the links add their route's cost and at most a little queueing.
        for what, got, want in (("request", req, expect_req), ("response", resp, expect_resp)):
            if not want <= got <= want * 1.05 + 100:
                failures.append(f"{name}: average {what} latency {got} ticks, expected {want}")
        link_traffic = {
            (src, dst): (f"pairRequests::{name}", HEADER_BYTES),
            (dst, src): (f"pairResponses::{name}", HEADER_BYTES + LINE),
        }
        if src != dst:
            # Only this pair uses these direct links, so the link counts must agree.
            for (a, b), (count_stat, nbytes) in link_traffic.items():
                lid = link_id(a, b)
                packets = stat(values, f"link{lid}.packets")
                if packets != stat(values, count_stat):
                    failures.append(
                        f"link{lid} carried {packets} packets, "
                        f"{count_stat} is {stat(values, count_stat)}"
                    )
                if stat(values, f"link{lid}.bytes") != packets * nbytes:
                    failures.append(f"link{lid} bytes do not match its packets")
    if len(round_trip) == len(pairs):
        ordering = [
            ((1, 1), (0, 1)),  # local stack access beats the host reaching it
            ((0, 1), (0, 2)),  # the far stack costs more than the near one
            ((1, 1), (1, 2)),  # a PIM core pays the stack link for remote memory
            ((1, 2), (0, 2)),  # stack link is shorter than host-stack2
        ]
        for fast, slow in ordering:
            if not round_trip[fast] < round_trip[slow]:
                failures.append(
                    f"{pair(*fast)} ({round_trip[fast]}) is not faster than "
                    f"{pair(*slow)} ({round_trip[slow]})"
                )
        if round_trip[(1, 1)] != 0:
            failures.append(f"local access {pair(1, 1)} got {round_trip[(1, 1)]} ticks")


def check_stress(values, failures):
    requests = sum(
        v
        for k, v in values.items()
        if k.startswith("system.router.pairRequests::") and not k.endswith("::total")
    )
    responses = sum(
        v
        for k, v in values.items()
        if k.startswith("system.router.pairResponses::") and not k.endswith("::total")
    )
    print(
        f"requests {requests:.0f}, responses {responses:.0f}, "
        f"refused {stat(values, 'refusedRequests'):.0f}"
    )
    if requests < 1000:
        failures.append(f"only {requests} requests under stress")
    # Reads and writes both get responses, and the idle tail drains every queue.
    if requests != responses:
        failures.append(f"{requests} requests but {responses} responses")
    busiest = 0.0
    for lid in range(len(LINKS)):
        util = stat(values, f"link{lid}.utilisation")
        queued = stat(values, f"link{lid}.avgQueueingDelay")
        print(f"link{lid} {LINKS[lid][:2]}: utilisation {util:.3f}, avg queueing {queued:.0f}")
        if util > 1.0 + 1e-6:
            failures.append(f"link{lid} utilisation {util} above 1")
        busiest = max(busiest, util)
    if busiest < 0.9:
        failures.append(f"no link got busy under stress (max utilisation {busiest})")
    if sum(stat(values, f"link{lid}.queueingDelay") for lid in range(len(LINKS))) <= 0:
        failures.append("no queueing delay under stress")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=["latency", "stress"], default="latency")
    args = parser.parse_args()

    system, generators = build(args.scenario)
    _root = Root(full_system=False, system=system)
    m5.instantiate()

    duration = fromSeconds(20e-6)
    span_end = len(MEMORIES) * MEM_SIZE
    for gen in generators:
        if args.scenario == "latency":
            period = fromSeconds(500e-9)  # sparse: links and memory stay idle between
            first = gen.createRandom(duration, 0, span_end, LINE, period, period, 100, 0)
        else:
            period = fromSeconds(1e-9)
            first = gen.createRandom(duration, 0, span_end, LINE, period, period, 50, 0)
        gen.start([first, gen.createIdle(duration)])

    event = m5.simulate(duration + fromSeconds(5e-6))
    print(f"stopped at tick {m5.curTick()}: {event.getCause()}")
    m5.stats.dump()

    values = read_stats(os.path.join(m5.options.outdir, "stats.txt"))
    tpb = float(MemoryBandwidth(LINK_BANDWIDTH[args.scenario]).getValue())
    failures = []
    if args.scenario == "latency":
        check_latency(values, tpb, failures)
    else:
        check_stress(values, failures)
    if failures:
        print("FAIL " + args.scenario)
        for failure in failures:
            print("  " + failure)
        sys.exit(1)
    print("PASS " + args.scenario)


# gem5 runs config scripts as __m5_main__.
if __name__ in ("__main__", "__m5_main__"):
    main()
