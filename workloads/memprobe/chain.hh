// The pointer chain of the memory-latency probe, free of system calls so it can be
// tested anywhere: one cycle through every cache line of a buffer in random order.
#ifndef PIMCLOUD_MEMPROBE_CHAIN_HH
#define PIMCLOUD_MEMPROBE_CHAIN_HH

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

namespace pimcloud::memprobe
{

inline constexpr std::size_t kLineBytes = 64;

// A random cyclic order of `lines` slots (Sattolo's algorithm): following next[i] from
// any slot visits every slot once before coming back, so a hardware prefetcher
// learns nothing and every load depends on the one before.
inline std::vector<std::uint32_t> randomCycle(std::size_t lines, std::uint64_t seed)
{
    std::vector<std::uint32_t> order(lines);
    std::iota(order.begin(), order.end(), 0U);
    std::mt19937_64 random(seed);
    for (std::size_t i = lines - 1; i > 0; --i) {
        std::uniform_int_distribution<std::size_t> pick(0, i - 1);
        std::swap(order[i], order[pick(random)]);
    }
    return order;  // Sattolo: i -> order[i] is a single cycle
}

// A cycle that stays inside one DRAM row for a while: blocks of `block_lines` lines
// (one row buffer) are visited in random order, and inside each block its lines in
// random order. Every load still misses the caches and the prefetcher sees no stride,
// but 1 - 1/block_lines of them hit the open row: the latency of an access with the row
// locality real programs have, against randomCycle's closed-row worst case.
inline std::vector<std::uint32_t> rowLocalCycle(std::size_t lines, std::size_t block_lines,
                                                std::uint64_t seed)
{
    const std::size_t blocks = lines / block_lines;
    std::mt19937_64 random(seed);
    std::vector<std::uint32_t> block_order(blocks);
    std::iota(block_order.begin(), block_order.end(), 0U);
    std::shuffle(block_order.begin(), block_order.end(), random);
    std::vector<std::uint32_t> visit;  // line indices in visiting order
    visit.reserve(blocks * block_lines);
    std::vector<std::uint32_t> inside(block_lines);
    for (const std::uint32_t block : block_order) {
        std::iota(inside.begin(), inside.end(), 0U);
        std::shuffle(inside.begin(), inside.end(), random);
        for (const std::uint32_t line : inside)
            visit.push_back(static_cast<std::uint32_t>(block * block_lines + line));
    }
    // Lines past the last whole block are left out of the cycle: they point to themselves
    // and are never reached from the start.
    std::vector<std::uint32_t> next(lines);
    std::iota(next.begin(), next.end(), 0U);
    for (std::size_t i = 0; i < visit.size(); ++i)
        next[visit[i]] = visit[(i + 1) % visit.size()];
    return next;
}

// Writes the chain into `buffer` (lines * kLineBytes bytes): the first word of line i
// holds the address of line next[i]. Returns the start of the chain.
inline void **linkChain(std::byte *buffer, const std::vector<std::uint32_t> &next)
{
    for (std::size_t i = 0; i < next.size(); ++i) {
        auto **slot = reinterpret_cast<void **>(buffer + i * kLineBytes);
        *slot = buffer + std::size_t{next[i]} * kLineBytes;
    }
    return reinterpret_cast<void **>(buffer);
}

// Follows the chain for `loads` dependent loads; returns where it stopped (the caller
// keeps it so the loads cannot be optimised away).
inline void **chase(void **start, std::uint64_t loads)
{
    void **p = start;
    std::uint64_t left = loads;
    for (; left >= 8; left -= 8) {
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
        p = static_cast<void **>(*p);
    }
    for (; left > 0; --left)
        p = static_cast<void **>(*p);
    return p;
}

} // namespace pimcloud::memprobe

#endif // PIMCLOUD_MEMPROBE_CHAIN_HH
