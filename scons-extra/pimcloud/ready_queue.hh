// The router's queue of packets waiting out their links, free of gem5 so that it is
// tested on its own (like link_model.hh; C++17 too).
//
// Packets leave in order of their ready tick; equal ticks keep arrival order, so the
// packets of one route never overtake each other. Requests of different routes may:
// a PIM core's local read is ready at once, a host's request to the same stack only
// after the SerDes link. Across lines that is the point of the model, but not within
// one line: the membus, the point of coherence, has already ordered every request to
// a line, and memory must see them in that order. A host cache's writeback still on
// the link, overtaken by a later local read of the same line, would hand the reader
// the line's stale data from DRAM (and a later write could be undone by an earlier
// one). So a request to a line is never ready before an earlier one to that line.
#ifndef PIMCLOUD_READY_QUEUE_HH
#define PIMCLOUD_READY_QUEUE_HH

#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>

#include "pimcloud/link_model.hh"

namespace pimcloud
{

template <class Item>
class ReadyQueue
{
  public:
    struct Entry
    {
        Tick ready;
        std::uint64_t line;
        Item item;
    };

    // A packet bound to no line order (a response).
    static constexpr std::uint64_t kNoLine = ~std::uint64_t{0};

    // Queue `item` (a request to `line`) to leave at `ready`, or later if an earlier
    // request to the same line leaves later. Returns the tick it will leave at.
    Tick insert(Item item, Tick ready, std::uint64_t line = kNoLine)
    {
        if (line != kNoLine) {
            for (const Entry &e : entries) {
                if (e.line == line)
                    ready = std::max(ready, e.ready);
            }
        }
        // Usually the newest packet is the latest one, so search from the back.
        auto pos = entries.end();
        while (pos != entries.begin() && std::prev(pos)->ready > ready)
            --pos;
        entries.insert(pos, Entry{ready, line, item});
        return ready;
    }

    bool empty() const { return entries.empty(); }
    std::size_t size() const { return entries.size(); }
    const Entry &front() const { return entries.front(); }
    void popFront() { entries.pop_front(); }

    // Newest first: of two queued writes to one line, the later one holds its data.
    template <class Visit>
    bool anyNewestFirst(Visit visit) const
    {
        for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
            if (visit(it->item))
                return true;
        }
        return false;
    }

  private:
    std::deque<Entry> entries;
};

} // namespace pimcloud

#endif // PIMCLOUD_READY_QUEUE_HH
