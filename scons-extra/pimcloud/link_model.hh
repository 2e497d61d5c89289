// The arithmetic of the requester-aware memory-side router: locations joined by
// directed SerDes links, routes between locations, serialisation of packets on each
// link at its bandwidth, and the mapping from requestor names to locations.
//
// Plain C++ without gem5, so that it is tested on its own; the PimLinkRouter
// SimObject keeps one LinkModel and one RequestorMap and only moves packets.
// It must compile as C++17 too, the standard gem5 v24 builds with.
// Ticks are picoseconds in gem5's default configuration but nothing here assumes it.
#ifndef PIMCLOUD_LINK_MODEL_HH
#define PIMCLOUD_LINK_MODEL_HH

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pimcloud
{

using Tick = std::uint64_t;

// The link ids of one route, in crossing order (a view into the route table).
struct Route
{
    const unsigned *first = nullptr;
    const unsigned *last = nullptr;

    const unsigned *begin() const { return first; }
    const unsigned *end() const { return last; }
    std::size_t size() const { return static_cast<std::size_t>(last - first); }
    bool empty() const { return first == last; }
};

// One direction of a link between two locations.
struct LinkSpec
{
    unsigned src = 0;
    unsigned dst = 0;
    Tick latency = 0;        // propagation, paid once per crossing
    double ticksPerByte = 0; // inverse bandwidth; 0 means unlimited bandwidth
};

// Ticks per byte of a bandwidth in bytes per second, for a clock of ticksPerSecond.
inline double
ticksPerByte(double bytesPerSecond, double ticksPerSecond)
{
    if (!(bytesPerSecond > 0) || !(ticksPerSecond > 0))
        throw std::invalid_argument(
            "bandwidth and tick rate must be positive, got " +
            std::to_string(bytesPerSecond) + " B/s at " +
            std::to_string(ticksPerSecond) + " ticks/s");
    return ticksPerSecond / bytesPerSecond;
}

// Ticks a link needs to put `bytes` on the wire. Rounded up so a packet never takes
// less than its share, except that a product within 1e-9 of an integer counts as that
// integer (0.1 * 30 must give 3, not 4).
inline Tick
serialisationTicks(std::uint64_t bytes, double ticks_per_byte)
{
    const double exact = static_cast<double>(bytes) * ticks_per_byte;
    const double nearest = std::round(exact);
    if (std::fabs(exact - nearest) <= 1e-9 * std::max(1.0, exact))
        return static_cast<Tick>(nearest);
    return static_cast<Tick>(std::ceil(exact));
}

// Which links a packet crosses from one location to another: a row-major
// numLocations x numLocations table in CSR form, as the PimLinkRouter params give it.
class RouteTable
{
  public:
    RouteTable(unsigned num_locations, std::vector<LinkSpec> links,
               std::vector<unsigned> route_offsets, std::vector<unsigned> route_links)
        : n(num_locations), linkSpecs(std::move(links)),
          offsets(std::move(route_offsets)), routeLinks(std::move(route_links))
    {
        validate();
    }

    unsigned numLocations() const { return n; }
    std::size_t numLinks() const { return linkSpecs.size(); }
    const LinkSpec &link(unsigned id) const { return linkSpecs.at(id); }

    // Directed link ids from `from` to `to`, in the order a packet crosses them.
    Route
    route(unsigned from, unsigned to) const
    {
        checkLocation(from, "source");
        checkLocation(to, "target");
        const std::size_t cell = std::size_t(from) * n + to;
        return Route{routeLinks.data() + offsets[cell], routeLinks.data() + offsets[cell + 1]};
    }

    // Latency of a packet of `bytes` alone on the route: propagation plus
    // serialisation on every hop (store and forward), no queueing.
    Tick
    unloadedLatency(unsigned from, unsigned to, std::uint64_t bytes) const
    {
        Tick total = 0;
        for (unsigned id : route(from, to))
            total += linkSpecs[id].latency +
                     serialisationTicks(bytes, linkSpecs[id].ticksPerByte);
        return total;
    }

  private:
    unsigned n;
    std::vector<LinkSpec> linkSpecs;
    std::vector<unsigned> offsets;
    std::vector<unsigned> routeLinks;

    void
    checkLocation(unsigned loc, const char *what) const
    {
        if (loc >= n)
            throw std::out_of_range(std::string(what) + " location " +
                                    std::to_string(loc) + " is not below num_locations " +
                                    std::to_string(n));
    }

    static void
    fail(const std::string &msg)
    {
        throw std::invalid_argument(msg);
    }

    void
    validate() const
    {
        if (n == 0)
            fail("num_locations must be at least 1 (location 0 is the host socket)");
        for (std::size_t i = 0; i < linkSpecs.size(); ++i) {
            const LinkSpec &l = linkSpecs[i];
            const std::string name = "link " + std::to_string(i);
            if (l.src >= n || l.dst >= n)
                fail(name + " joins locations " + std::to_string(l.src) + " -> " +
                     std::to_string(l.dst) + " but num_locations is " +
                     std::to_string(n) + "; fix link_src/link_dst");
            if (l.src == l.dst)
                fail(name + " starts and ends at location " + std::to_string(l.src) +
                     "; a link must join two different locations");
            if (!(l.ticksPerByte >= 0) || !std::isfinite(l.ticksPerByte))
                fail(name + " has an invalid bandwidth; give a positive link_bandwidth");
        }
        const std::size_t cells = std::size_t(n) * n;
        if (offsets.size() != cells + 1)
            fail("route_offsets has " + std::to_string(offsets.size()) +
                 " entries; it needs num_locations*num_locations + 1 = " +
                 std::to_string(cells + 1));
        if (offsets.front() != 0)
            fail("route_offsets must start at 0");
        if (offsets.back() != routeLinks.size())
            fail("route_offsets ends at " + std::to_string(offsets.back()) +
                 " but route_links has " + std::to_string(routeLinks.size()) +
                 " entries; the last offset must equal the size of route_links");
        for (std::size_t c = 0; c < cells; ++c)
            if (offsets[c] > offsets[c + 1])
                fail("route_offsets must not decrease (entry " + std::to_string(c) + ")");
        for (unsigned a = 0; a < n; ++a)
            for (unsigned b = 0; b < n; ++b)
                validateRoute(a, b);
    }

    void
    validateRoute(unsigned a, unsigned b) const
    {
        const std::string name =
            "route " + std::to_string(a) + " -> " + std::to_string(b);
        const std::size_t cell = std::size_t(a) * n + b;
        const unsigned first = offsets[cell], last = offsets[cell + 1];
        if (a == b) {
            if (first != last)
                fail(name + " must be empty: a location reaches itself without links");
            return;
        }
        if (first == last)
            fail(name + " is empty; every pair of different locations needs links");
        unsigned at = a;
        for (unsigned k = first; k < last; ++k) {
            const unsigned id = routeLinks[k];
            if (id >= linkSpecs.size())
                fail(name + " names link " + std::to_string(id) + " but there are only " +
                     std::to_string(linkSpecs.size()) + " links");
            if (linkSpecs[id].src != at)
                fail(name + " is broken at link " + std::to_string(id) + ": it starts at " +
                     std::to_string(linkSpecs[id].src) + " but the path is at " +
                     std::to_string(at));
            at = linkSpecs[id].dst;
        }
        if (at != b)
            fail(name + " ends at location " + std::to_string(at));
    }
};

// What one link has carried so far.
struct LinkState
{
    Tick nextFree = 0;      // first tick at which the link can start a new packet
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
    Tick queueingDelay = 0; // sum over packets of the wait for the link
    Tick busyTicks = 0;     // sum of serialisation times

    // Fraction of `elapsed` ticks the link spent serialising.
    double
    utilisation(Tick elapsed) const
    {
        return elapsed ? static_cast<double>(busyTicks) / static_cast<double>(elapsed) : 0.0;
    }
};

// One link crossing of one packet.
struct Hop
{
    unsigned link;
    Tick arrival;       // when the packet reached the link
    Tick queueing;      // waiting for the link to be free
    Tick serialisation; // time on the wire
};

// Links with their occupancy. A packet reserves each link of its route in turn
// when it enters the router, so the model is event-free: the caller only learns
// when the packet arrives at its target.
class LinkModel
{
  public:
    explicit LinkModel(RouteTable table)
        : routes(std::move(table)), states(routes.numLinks())
    {}

    const RouteTable &table() const { return routes; }
    const LinkState &state(unsigned link) const { return states.at(link); }

    // Send `bytes` from `from` to `to`, entering at tick `now`; returns the tick at
    // which the packet reaches `to`. `on_hop` sees every crossing (for statistics).
    template <typename OnHop>
    Tick
    traverse(unsigned from, unsigned to, std::uint64_t bytes, Tick now, OnHop &&on_hop)
    {
        Tick t = now;
        for (unsigned id : routes.route(from, to)) {
            const LinkSpec &spec = routes.link(id);
            LinkState &s = states[id];
            const Tick start = std::max(t, s.nextFree);
            const Tick ser = serialisationTicks(bytes, spec.ticksPerByte);
            s.nextFree = start + ser;
            s.packets += 1;
            s.bytes += bytes;
            s.queueingDelay += start - t;
            s.busyTicks += ser;
            on_hop(Hop{id, t, start - t, ser});
            t = start + ser + spec.latency;
        }
        return t;
    }

    Tick
    traverse(unsigned from, unsigned to, std::uint64_t bytes, Tick now)
    {
        return traverse(from, to, bytes, now, [](const Hop &) {});
    }

  private:
    RouteTable routes;
    std::vector<LinkState> states;
};

// Source location of a requestor from its name: the longest configured prefix that
// starts the name wins; names no prefix matches belong to the default location.
class RequestorMap
{
  public:
    RequestorMap(std::vector<std::string> prefixes, std::vector<unsigned> locations,
                 unsigned default_location, unsigned num_locations)
        : prefixes(std::move(prefixes)), locations(std::move(locations)),
          defaultLoc(default_location)
    {
        if (this->prefixes.size() != this->locations.size())
            throw std::invalid_argument(
                "requestor_prefixes has " + std::to_string(this->prefixes.size()) +
                " entries but requestor_locations has " +
                std::to_string(this->locations.size()) + "; give one location per prefix");
        if (defaultLoc >= num_locations)
            throw std::invalid_argument("default_location " + std::to_string(defaultLoc) +
                                        " is not below num_locations " +
                                        std::to_string(num_locations));
        for (std::size_t i = 0; i < this->prefixes.size(); ++i) {
            if (this->locations[i] >= num_locations)
                throw std::invalid_argument(
                    "requestor prefix '" + this->prefixes[i] + "' maps to location " +
                    std::to_string(this->locations[i]) + ", not below num_locations " +
                    std::to_string(num_locations));
            for (std::size_t j = 0; j < i; ++j)
                if (this->prefixes[i] == this->prefixes[j] &&
                    this->locations[i] != this->locations[j])
                    throw std::invalid_argument(
                        "requestor prefix '" + this->prefixes[i] +
                        "' is given twice with different locations");
        }
    }

    unsigned defaultLocation() const { return defaultLoc; }

    unsigned
    locate(std::string_view name) const
    {
        unsigned best = defaultLoc;
        std::size_t best_len = 0;
        bool found = false;
        for (std::size_t i = 0; i < prefixes.size(); ++i) {
            const std::string &p = prefixes[i];
            if (name.substr(0, p.size()) == p && (!found || p.size() > best_len)) {
                best = locations[i];
                best_len = p.size();
                found = true;
            }
        }
        return best;
    }

  private:
    std::vector<std::string> prefixes;
    std::vector<unsigned> locations;
    unsigned defaultLoc;
};

} // namespace pimcloud

#endif // PIMCLOUD_LINK_MODEL_HH
