// The pattern pimcloud-pagecheck writes and verifies: one 8-byte word per cache line,
// holding the round that wrote it and the line's index, so a line that lost a write (a
// store that went to a page's old copy during a migration) or took another line's data
// reads wrong in the next round.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pimcloud::pagecheck {

constexpr std::size_t kLineWords = 8;  // 64-byte lines of 8-byte words

constexpr std::uint64_t expected(std::uint64_t round, std::uint64_t line) {
  return (round << 40) ^ (line * 0x9e3779b97f4a7c15ULL >> 24);
}

struct Pass {
  std::uint64_t mismatches = 0;
  std::uint64_t firstLine = 0;      // of the first mismatch
  std::uint64_t firstFound = 0;
  std::uint64_t firstExpected = 0;
};

// Adds a pass to a running total, keeping the total's first mismatch.
inline void absorb(Pass& total, const Pass& pass) {
  if (pass.mismatches > 0 && total.mismatches == 0) total = pass;
  else total.mismatches += pass.mismatches;
}

// Round `round` over `lines` lines at `words`: each line's word must hold round-1's value
// (round 0 only writes), then takes this round's. `backwards` visits the last line first.
inline Pass verifyAndWrite(volatile std::uint64_t* words, std::size_t lines, std::uint64_t round,
                           bool backwards = false) {
  Pass pass;
  for (std::size_t i = 0; i < lines; ++i) {
    const std::size_t line = backwards ? lines - 1 - i : i;
    volatile std::uint64_t& word = words[line * kLineWords];
    if (round > 0) {
      const std::uint64_t want = expected(round - 1, line);
      const std::uint64_t got = word;
      if (got != want && pass.mismatches++ == 0) {
        pass.firstLine = line;
        pass.firstFound = got;
        pass.firstExpected = want;
      }
    }
    word = expected(round, line);
  }
  return pass;
}

}  // namespace pimcloud::pagecheck
