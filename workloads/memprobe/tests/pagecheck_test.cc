#include "pagecheck.hh"

#include <gtest/gtest.h>

#include <vector>

using namespace pimcloud::pagecheck;

TEST(PageCheck, RoundsOverAnUntouchedBufferFindNothing) {
  std::vector<std::uint64_t> buf(64 * kLineWords);
  for (std::uint64_t r = 0; r < 4; ++r) EXPECT_EQ(verifyAndWrite(buf.data(), 64, r).mismatches, 0U);
}

TEST(PageCheck, ALostWriteAndAnotherLinesDataAreFound) {
  std::vector<std::uint64_t> buf(64 * kLineWords);
  verifyAndWrite(buf.data(), 64, 0);
  verifyAndWrite(buf.data(), 64, 1);
  buf[5 * kLineWords] = expected(0, 5);    // round 1's write to line 5 lost
  buf[9 * kLineWords] = expected(1, 10);   // line 9 holds line 10's word
  const Pass p = verifyAndWrite(buf.data(), 64, 2);
  EXPECT_EQ(p.mismatches, 2U);
  EXPECT_EQ(p.firstLine, 5U);
  EXPECT_EQ(p.firstFound, expected(0, 5));
  EXPECT_EQ(p.firstExpected, expected(1, 5));
  EXPECT_EQ(verifyAndWrite(buf.data(), 64, 3).mismatches, 0U);  // rewritten in round 2
}

TEST(PageCheck, BackwardsVisitsTheLastLineFirst) {
  std::vector<std::uint64_t> buf(64 * kLineWords);
  verifyAndWrite(buf.data(), 64, 0);
  buf[3 * kLineWords] = 0;
  buf[60 * kLineWords] = 0;
  const Pass p = verifyAndWrite(buf.data(), 64, 1, true);
  EXPECT_EQ(p.mismatches, 2U);
  EXPECT_EQ(p.firstLine, 60U);
  EXPECT_EQ(verifyAndWrite(buf.data(), 64, 2).mismatches, 0U);  // every line written once
}
