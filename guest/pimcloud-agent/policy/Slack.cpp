#include "policy/Slack.h"

#include <algorithm>
#include <cmath>

namespace pimcloud {

double median(std::deque<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void SlackWindow::add(double p99Ns, double meanNs) {
  p99_.push_back(p99Ns);
  mean_.push_back(meanNs);
  while (p99_.size() > capacity_) p99_.pop_front();
  while (mean_.size() > capacity_) mean_.pop_front();
}

void SlackWindow::clear() {
  p99_.clear();
  mean_.clear();
}

std::optional<double> SlackWindow::slack(double qosNs) const {
  if (p99_.empty() || qosNs <= 0) return std::nullopt;
  return (qosNs - median(p99_)) / qosNs;
}

bool SlackWindow::stable(double tolerance) const {
  if (mean_.size() < 2) return false;
  const double last = mean_[mean_.size() - 1];
  const double prev = mean_[mean_.size() - 2];
  if (prev <= 0) return last <= 0;
  return std::fabs(last - prev) / prev <= tolerance;
}

}  // namespace pimcloud
