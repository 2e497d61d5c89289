#include "engine/Profiler.h"

#include <algorithm>

namespace pimcloud {

bool ProfileWindow::names(const ProfileMarker& m) const {
  return m.tNs == tNs && m.cpu == cpu && m.coreType == toString(type);
}

std::string ProfileWindow::how() const {
  std::string out;
  if (markedLines > 0) out = std::to_string(markedLines) + " lines marked with its request";
  if (unmarkedLines > 0) {
    out += (out.empty() ? "" : " + ") + std::to_string(unmarkedLines) +
           " unmarked lines after its request (the harness marks no profile windows)";
  }
  if (!out.empty()) return out;
  return harnessMarks ? "no line marked with its request: does the harness read the agent's "
                        "control file (--control-file)?"
                      : "no line measured its window";
}

void countProfileLine(std::vector<ProfileWindow>& windows, const IntervalStats& s,
                      std::int64_t agentIntervalNs) {
  if (windows.empty()) return;
  if (s.marksProfiles) {
    windows.back().harnessMarks = true;
    // Any of the app's requests, so a line for the host window that arrives after the PIM
    // request still counts for the host.
    if (!s.profile) return;
    for (ProfileWindow& w : windows) {
      if (!w.names(*s.profile)) continue;
      w.maxRps = std::max(w.maxRps, s.rps);
      ++w.markedLines;
    }
    return;
  }
  ProfileWindow& w = windows.back();
  const std::int64_t length = s.intervalNs > 0 ? s.intervalNs : agentIntervalNs;
  if (s.tNs - length < w.tNs) return;  // began before the request: not all saturated
  w.maxRps = std::max(w.maxRps, s.rps);
  ++w.unmarkedLines;
}

}  // namespace pimcloud
