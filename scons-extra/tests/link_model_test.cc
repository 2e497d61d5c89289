// Tests of the router's arithmetic: routes, serialisation, queueing, utilisation and
// the requestor-name mapping. Expected values are derived from the link parameters.
#include "pimcloud/link_model.hh"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pimcloud
{
namespace
{

using Pair = std::pair<unsigned, unsigned>;

// CSR route tables from a readable {(from, to): links} map; absent pairs are empty.
struct Csr
{
    std::vector<unsigned> offsets;
    std::vector<unsigned> links;
};

Csr
csr(unsigned n, const std::map<Pair, std::vector<unsigned>> &routes)
{
    Csr out{{0}, {}};
    for (unsigned a = 0; a < n; ++a) {
        for (unsigned b = 0; b < n; ++b) {
            if (auto it = routes.find({a, b}); it != routes.end())
                out.links.insert(out.links.end(), it->second.begin(), it->second.end());
            out.offsets.push_back(static_cast<unsigned>(out.links.size()));
        }
    }
    return out;
}

// The paper's default shape: host (0) and two stacks (1, 2). 160 GB/s per link
// direction at 1 THz ticks is 6.25 ticks per byte.
constexpr Tick hostLinkLatency = 4000;
constexpr Tick stackLinkLatency = 2500;
const double tpb = ticksPerByte(160e9, 1e12);

std::vector<LinkSpec>
paperLinks()
{
    return {
        {0, 1, hostLinkLatency, tpb},  // 0
        {1, 0, hostLinkLatency, tpb},  // 1
        {0, 2, hostLinkLatency, tpb},  // 2
        {2, 0, hostLinkLatency, tpb},  // 3
        {1, 2, stackLinkLatency, tpb}, // 4
        {2, 1, stackLinkLatency, tpb}, // 5
    };
}

RouteTable
paperTable(bool stack_traffic_via_host = false)
{
    std::map<Pair, std::vector<unsigned>> routes{
        {{0, 1}, {0}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
        {{1, 2}, {4}}, {{2, 1}, {5}},
    };
    if (stack_traffic_via_host) {
        routes[{1, 2}] = {1, 2};
        routes[{2, 1}] = {3, 0};
    }
    Csr c = csr(3, routes);
    return RouteTable(3, paperLinks(), c.offsets, c.links);
}

std::string
errorOf(const std::function<void()> &f)
{
    try {
        f();
    } catch (const std::exception &e) {
        return e.what();
    }
    return "";
}

TEST(Serialisation, TicksPerByteFromBandwidth)
{
    EXPECT_DOUBLE_EQ(ticksPerByte(160e9, 1e12), 1e12 / 160e9);
    EXPECT_DOUBLE_EQ(ticksPerByte(1e12, 1e12), 1.0);
    EXPECT_THROW(ticksPerByte(0, 1e12), std::invalid_argument);
    EXPECT_THROW(ticksPerByte(1e9, -1), std::invalid_argument);
}

TEST(Serialisation, RoundsUpButNotOnFloatNoise)
{
    EXPECT_EQ(serialisationTicks(64, 6.25), 400u);
    EXPECT_EQ(serialisationTicks(30, 0.1), 3u); // 0.1 * 30 is 3.0000000000000004
    EXPECT_EQ(serialisationTicks(3, 0.4), 2u);  // 1.2 ticks take 2
    EXPECT_EQ(serialisationTicks(80, 0.0), 0u); // unlimited bandwidth
    EXPECT_EQ(serialisationTicks(0, 6.25), 0u);
}

TEST(Routes, LatencyPerRoute)
{
    const RouteTable t = paperTable();
    const std::uint64_t header = 16;
    const Tick host_hop = hostLinkLatency + serialisationTicks(header, tpb);
    const Tick stack_hop = stackLinkLatency + serialisationTicks(header, tpb);
    EXPECT_EQ(t.unloadedLatency(0, 1, header), host_hop);
    EXPECT_EQ(t.unloadedLatency(2, 0, header), host_hop);
    EXPECT_EQ(t.unloadedLatency(1, 2, header), stack_hop);
    EXPECT_EQ(t.unloadedLatency(1, 1, header), 0u);
    EXPECT_TRUE(t.route(2, 2).empty());
    ASSERT_EQ(t.route(0, 2).size(), 1u);
    EXPECT_EQ(*t.route(0, 2).begin(), 2u);
    EXPECT_THROW(t.route(3, 0), std::out_of_range);
}

TEST(Routes, MultiHopRouteAddsEveryHop)
{
    const RouteTable t = paperTable(/*stack_traffic_via_host=*/true);
    const std::uint64_t bytes = 16 + 64;
    const std::vector<unsigned> expected{1, 2};
    EXPECT_EQ(std::vector<unsigned>(t.route(1, 2).begin(), t.route(1, 2).end()), expected);
    EXPECT_EQ(t.unloadedLatency(1, 2, bytes),
              2 * (hostLinkLatency + serialisationTicks(bytes, tpb)));

    // Store and forward: the second hop starts after the first hop's wire time and
    // latency, and the hops are reported in path order.
    LinkModel m(t);
    std::vector<Hop> hops;
    const Tick arrival = m.traverse(1, 2, bytes, 1000, [&](const Hop &h) { hops.push_back(h); });
    const Tick ser = serialisationTicks(bytes, tpb);
    ASSERT_EQ(hops.size(), 2u);
    EXPECT_EQ(hops[0].link, 1u);
    EXPECT_EQ(hops[0].arrival, 1000u);
    EXPECT_EQ(hops[1].link, 2u);
    EXPECT_EQ(hops[1].arrival, 1000 + ser + hostLinkLatency);
    EXPECT_EQ(arrival, 1000 + 2 * (ser + hostLinkLatency));
}

TEST(Links, BackToBackPacketsSerialise)
{
    LinkModel m(paperTable());
    const std::uint64_t bytes = 80; // header + 64-byte line
    const Tick ser = serialisationTicks(bytes, tpb);
    std::vector<Tick> arrivals;
    for (int i = 0; i < 4; ++i)
        arrivals.push_back(m.traverse(0, 1, bytes, 0));
    for (int i = 0; i < 4; ++i)
        EXPECT_EQ(arrivals[i], (i + 1) * ser + hostLinkLatency) << "packet " << i;

    const LinkState &s = m.state(0);
    EXPECT_EQ(s.packets, 4u);
    EXPECT_EQ(s.bytes, 4 * bytes);
    EXPECT_EQ(s.busyTicks, 4 * ser);
    EXPECT_EQ(s.nextFree, 4 * ser);
    EXPECT_EQ(s.queueingDelay, (0 + 1 + 2 + 3) * ser); // each waits for those before
    // The reverse direction is a separate link and stays idle.
    EXPECT_EQ(m.state(1).packets, 0u);
}

TEST(Links, QueueingOnlyWhileTheLinkIsBusy)
{
    LinkModel m(paperTable());
    const Tick ser = serialisationTicks(80, tpb);
    std::vector<Tick> waits;
    auto record = [&](const Hop &h) { waits.push_back(h.queueing); };
    m.traverse(0, 1, 80, 0, record);         // busy until ser
    m.traverse(0, 1, 80, ser / 2, record);   // waits for the rest of the first
    m.traverse(0, 1, 80, 10 * ser, record);  // the link is idle again
    EXPECT_EQ(waits, (std::vector<Tick>{0, ser - ser / 2, 0}));
    EXPECT_EQ(m.state(0).queueingDelay, ser - ser / 2);
    EXPECT_EQ(m.state(0).nextFree, 11 * ser);
}

TEST(Links, SharedHopQueuesTrafficFromDifferentRoutes)
{
    // Host -> stack 2 and stack 1 -> stack 2 (via host) share link 2.
    LinkModel m(paperTable(/*stack_traffic_via_host=*/true));
    const std::uint64_t bytes = 80;
    const Tick ser = serialisationTicks(bytes, tpb);
    const Tick via_host_reaches_link2 = ser + hostLinkLatency;
    // A host packet that occupies link 2 exactly when the stack packet arrives there.
    m.traverse(0, 2, bytes, via_host_reaches_link2);
    const Tick arrival = m.traverse(1, 2, bytes, 0);
    EXPECT_EQ(m.state(2).queueingDelay, ser);
    EXPECT_EQ(arrival, via_host_reaches_link2 + ser /*wait*/ + ser + hostLinkLatency);
}

TEST(Links, Utilisation)
{
    LinkModel m(paperTable());
    const Tick ser = serialisationTicks(80, tpb);
    for (int i = 0; i < 10; ++i)
        m.traverse(0, 1, 80, i * 4 * ser); // one packet every four wire times
    const Tick elapsed = 40 * ser;
    EXPECT_DOUBLE_EQ(m.state(0).utilisation(elapsed), 10.0 * ser / elapsed);
    EXPECT_DOUBLE_EQ(m.state(0).utilisation(elapsed), 0.25);
    EXPECT_DOUBLE_EQ(m.state(1).utilisation(elapsed), 0.0);
    EXPECT_DOUBLE_EQ(m.state(0).utilisation(0), 0.0);
}

TEST(Links, LocalAccessCrossesNoLink)
{
    LinkModel m(paperTable());
    EXPECT_EQ(m.traverse(1, 1, 80, 1234), 1234u);
    for (unsigned id = 0; id < 6; ++id)
        EXPECT_EQ(m.state(id).packets, 0u);
}

TEST(RouteTableErrors, NameTheProblem)
{
    const Csr good = csr(3, {{{0, 1}, {0}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
                             {{1, 2}, {4}}, {{2, 1}, {5}}});
    EXPECT_EQ(errorOf([&] { RouteTable(3, paperLinks(), good.offsets, good.links); }), "");

    auto short_offsets = good.offsets;
    short_offsets.pop_back();
    EXPECT_NE(errorOf([&] { RouteTable(3, paperLinks(), short_offsets, good.links); })
                  .find("num_locations*num_locations + 1 = 10"),
              std::string::npos);

    Csr missing = csr(3, {{{0, 1}, {0}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
                          {{1, 2}, {4}}});
    EXPECT_NE(errorOf([&] { RouteTable(3, paperLinks(), missing.offsets, missing.links); })
                  .find("route 2 -> 1 is empty"),
              std::string::npos);

    Csr broken = csr(3, {{{0, 1}, {0}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
                         {{1, 2}, {2}}, {{2, 1}, {5}}});
    EXPECT_NE(errorOf([&] { RouteTable(3, paperLinks(), broken.offsets, broken.links); })
                  .find("route 1 -> 2 is broken at link 2"),
              std::string::npos);

    Csr self = csr(3, {{{0, 1}, {0}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
                       {{1, 2}, {4}}, {{2, 1}, {5}}, {{1, 1}, {4, 5}}});
    EXPECT_NE(errorOf([&] { RouteTable(3, paperLinks(), self.offsets, self.links); })
                  .find("route 1 -> 1 must be empty"),
              std::string::npos);

    Csr unknown = csr(3, {{{0, 1}, {9}}, {{1, 0}, {1}}, {{0, 2}, {2}}, {{2, 0}, {3}},
                          {{1, 2}, {4}}, {{2, 1}, {5}}});
    EXPECT_NE(errorOf([&] { RouteTable(3, paperLinks(), unknown.offsets, unknown.links); })
                  .find("names link 9"),
              std::string::npos);

    auto bad_links = paperLinks();
    bad_links[3].src = 7;
    EXPECT_NE(errorOf([&] { RouteTable(3, bad_links, good.offsets, good.links); })
                  .find("link 3 joins locations 7 -> 0"),
              std::string::npos);
}

TEST(RequestorMap, LongestPrefixWins)
{
    // Listed out of length order so that neither first nor last match is right.
    const RequestorMap map({"system.stack0.", "system.stack0.cpu3.", "system.", "system.stack1."},
                           {1, 2, 0, 2}, 0, 3);
    EXPECT_EQ(map.locate("system.stack0.cpu3.dcache"), 2u);
    EXPECT_EQ(map.locate("system.stack0.cpu2.dcache"), 1u);
    EXPECT_EQ(map.locate("system.stack1.cpu0.data"), 2u);
    EXPECT_EQ(map.locate("system.host.cpu0.dcache"), 0u);
}

TEST(RequestorMap, UnknownRequestorsGoToTheDefault)
{
    const RequestorMap map({"system.stack0."}, {1}, 2, 3);
    EXPECT_EQ(map.locate("writebacks"), 2u);
    EXPECT_EQ(map.locate(""), 2u);
    EXPECT_EQ(map.locate("system.stack0"), 2u); // shorter than the prefix
    EXPECT_EQ(map.defaultLocation(), 2u);
}

TEST(RequestorMap, EmptyPrefixIsTheWeakestMatch)
{
    const RequestorMap map({"", "system.stack0."}, {1, 2}, 0, 3);
    EXPECT_EQ(map.locate("anything"), 1u);
    EXPECT_EQ(map.locate("system.stack0.cpu0"), 2u);
}

TEST(RequestorMap, BadInputIsNamed)
{
    EXPECT_NE(errorOf([] { RequestorMap({"a", "b"}, {1}, 0, 3); })
                  .find("requestor_prefixes has 2 entries but requestor_locations has 1"),
              std::string::npos);
    EXPECT_NE(errorOf([] { RequestorMap({"a"}, {3}, 0, 3); }).find("'a' maps to location 3"),
              std::string::npos);
    EXPECT_NE(errorOf([] { RequestorMap({}, {}, 5, 3); }).find("default_location 5"),
              std::string::npos);
    EXPECT_NE(errorOf([] { RequestorMap({"a", "a"}, {1, 2}, 0, 3); })
                  .find("given twice with different locations"),
              std::string::npos);
}

} // namespace
} // namespace pimcloud
