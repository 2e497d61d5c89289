// Latency slack (IV-D3): the median p99 of the last five 100 ms intervals against the
// QoS target, and the mean-latency stability test used while waiting after a change.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>

namespace pimcloud {

class SlackWindow {
 public:
  explicit SlackWindow(std::size_t intervals = 5) : capacity_(intervals) {}

  void add(double p99Ns, double meanNs);
  void clear();  // after the app's allocation changes: old intervals no longer apply
  std::size_t size() const { return p99_.size(); }

  // (QoS - median p99) / QoS; < 0 is a QoS violation. Empty window: nullopt.
  std::optional<double> slack(double qosNs) const;
  // The last two intervals' mean latency differ by at most `tolerance` (relative).
  bool stable(double tolerance) const;

 private:
  std::size_t capacity_;
  std::deque<double> p99_;
  std::deque<double> mean_;
};

double median(std::deque<double> values);

}  // namespace pimcloud
