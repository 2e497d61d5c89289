#include "chain.hh"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace pimcloud::memprobe
{
namespace
{

TEST(MemprobeChain, RandomCycleVisitsEveryLineOnceThenReturns)
{
    for (const std::size_t lines : {2UL, 3UL, 64UL, 4097UL}) {
        const auto next = randomCycle(lines, 7);
        std::set<std::uint32_t> seen;
        std::uint32_t at = 0;
        for (std::size_t step = 0; step < lines; ++step) {
            EXPECT_TRUE(seen.insert(at).second) << "line " << at << " visited twice";
            at = next[at];
        }
        EXPECT_EQ(at, 0U);
        EXPECT_EQ(seen.size(), lines);
    }
}

TEST(MemprobeChain, RowLocalCycleVisitsEveryBlockLineOnceAndStaysInRows)
{
    const std::size_t lines = 32 * 40;
    const auto next = rowLocalCycle(lines, 32, 5);
    std::set<std::uint32_t> seen;
    std::uint32_t at = next[0] == 0 ? 1 : 0;
    const std::uint32_t start = at;
    std::size_t row_changes = 0;
    for (std::size_t step = 0; step < lines; ++step) {
        EXPECT_TRUE(seen.insert(at).second) << "line " << at << " visited twice";
        row_changes += next[at] / 32 != at / 32;
        at = next[at];
    }
    EXPECT_EQ(at, start);
    EXPECT_EQ(seen.size(), lines);
    EXPECT_EQ(row_changes, 40U);  // one per block: every other step stays in its row
}

TEST(MemprobeChain, SeedsGiveDifferentOrdersAndTheSameSeedTheSame)
{
    EXPECT_EQ(randomCycle(1000, 1), randomCycle(1000, 1));
    EXPECT_NE(randomCycle(1000, 1), randomCycle(1000, 2));
}

TEST(MemprobeChain, ChaseFollowsTheLinkedAddresses)
{
    const std::size_t lines = 100;
    std::vector<std::byte> buffer(lines * kLineBytes);
    const auto next = randomCycle(lines, 3);
    void **start = linkChain(buffer.data(), next);
    std::uint32_t expected = 0;
    for (std::uint64_t loads : {1ULL, 7ULL, 8ULL, 9ULL, 250ULL}) {
        expected = 0;
        for (std::uint64_t i = 0; i < loads; ++i)
            expected = next[expected];
        void **end = chase(start, loads);
        EXPECT_EQ(reinterpret_cast<std::byte *>(end),
                  buffer.data() + std::size_t{expected} * kLineBytes)
            << loads << " loads";
    }
}

} // namespace
} // namespace pimcloud::memprobe
