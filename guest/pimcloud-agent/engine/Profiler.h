// The profiling protocol (IV-D1): the agent asks the harness to saturate an app on one
// host core, then on one PIM core, for a window each, and takes the largest RPS the live
// statistics report inside each window as the app's max RPS on that core type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/LatencySource.h"
#include "policy/Topology.h"

namespace pimcloud {

// One profile request and what the live statistics said about it. A line counts for the
// request when the harness's marker names it (exact: the harness marks only lines whose
// whole interval lies in the saturation window). A harness that marks no windows gets the
// fallback: a line read while the request is the app's latest whose interval began at or
// after the request (its length is taken as one agent interval when the line has none).
struct ProfileWindow {
  CoreType type = CoreType::Host;
  int cpu = -1;
  std::int64_t tNs = 0;     // the request's t_ns: the harness echoes it in its marker
  std::int64_t untilNs = 0;
  double maxRps = 0;
  int markedLines = 0;      // lines whose marker names this request
  int unmarkedLines = 0;    // fallback: lines without a marker, wholly after tNs
  bool harnessMarks = false;  // lines read while this was the latest request had markers

  bool names(const ProfileMarker& m) const;
  std::string how() const;  // which lines the maximum came from, for the decision log
};

// Counts one statistics line of the app towards its profile windows (the latest request,
// or the one its marker names); `agentIntervalNs` is a line's length when it has none.
void countProfileLine(std::vector<ProfileWindow>& windows, const IntervalStats& s,
                      std::int64_t agentIntervalNs);

}  // namespace pimcloud
