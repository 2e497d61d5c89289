// Tests of the router's wait queue: ready order, arrival order on equal ticks, and no
// request overtaking an earlier one to the same line (the writeback-then-read race).
#include "pimcloud/ready_queue.hh"

#include <gtest/gtest.h>

#include <vector>

namespace pimcloud
{
namespace
{

std::vector<int>
drain(ReadyQueue<int> &q)
{
    std::vector<int> order;
    while (!q.empty()) {
        order.push_back(q.front().item);
        q.popFront();
    }
    return order;
}

TEST(ReadyQueue, LeavesInReadyOrderAndArrivalOrderOnEqualTicks)
{
    ReadyQueue<int> q;
    q.insert(1, 300, 0x100);
    q.insert(2, 100, 0x140);
    q.insert(3, 300, 0x180);
    q.insert(4, 200, 0x1c0);
    EXPECT_EQ(drain(q), (std::vector<int>{2, 4, 1, 3}));
}

TEST(ReadyQueue, ALaterRequestToTheSameLineNeverOvertakes)
{
    // A host writeback on the link (ready at 7,500) and then a PIM core's local read of
    // the same line (ready at once): the read must wait for the writeback.
    ReadyQueue<int> q;
    EXPECT_EQ(q.insert(1, 7'500, 0x4000), 7'500u);
    EXPECT_EQ(q.insert(2, 1'000, 0x4000), 7'500u);
    // Another line is not held back.
    EXPECT_EQ(q.insert(3, 1'000, 0x4040), 1'000u);
    EXPECT_EQ(drain(q), (std::vector<int>{3, 1, 2}));
}

TEST(ReadyQueue, AChainOfOneLineKeepsItsOrder)
{
    ReadyQueue<int> q;
    q.insert(1, 9'000, 0x4000);
    q.insert(2, 500, 0x4000);
    q.insert(3, 100, 0x4000);
    q.insert(4, 9'000, 0x8000);
    EXPECT_EQ(drain(q), (std::vector<int>{1, 2, 3, 4}));
}

TEST(ReadyQueue, PacketsWithoutALineKeepNoLineOrder)
{
    ReadyQueue<int> q;
    q.insert(1, 7'500);
    EXPECT_EQ(q.insert(2, 1'000), 1'000u);
    EXPECT_EQ(drain(q), (std::vector<int>{2, 1}));
}

TEST(ReadyQueue, OnlyWaitsForRequestsStillQueued)
{
    ReadyQueue<int> q;
    q.insert(1, 7'500, 0x4000);
    q.popFront();  // it has gone to memory
    EXPECT_EQ(q.insert(2, 1'000, 0x4000), 1'000u);
}

TEST(ReadyQueue, NewestFirstFindsTheLatestOfOneLine)
{
    ReadyQueue<int> q;
    q.insert(1, 5'000, 0x4000);
    q.insert(2, 9'000, 0x8000);
    q.insert(3, 100, 0x4000);  // held to 5,000: after 1, before 2
    std::vector<int> seen;
    EXPECT_FALSE(q.anyNewestFirst([&](int item) {
        seen.push_back(item);
        return false;
    }));
    EXPECT_EQ(seen, (std::vector<int>{2, 3, 1}));
    EXPECT_TRUE(q.anyNewestFirst([](int item) { return item == 3; }));
}

} // namespace
} // namespace pimcloud
