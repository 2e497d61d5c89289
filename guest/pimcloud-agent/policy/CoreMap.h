// Who holds each core: an LC app or the BE pool. Every core has exactly one owner,
// so a core can be neither double-allocated nor lost.
#pragma once

#include <cstdint>
#include <vector>

#include "policy/Topology.h"
#include "policy/Types.h"

namespace pimcloud {

struct CoreCount {
  int host = 0;
  int pim = 0;
  int total() const { return host + pim; }
};

class CoreMap {
 public:
  explicit CoreMap(const Topology& topology);

  const Topology& topology() const { return *topology_; }
  AppId owner(int core) const { return owner_.at(static_cast<std::size_t>(core)); }
  void give(int core, AppId to);  // moves the core, remembering when
  std::uint64_t acquiredAt(int core) const { return acquired_.at(static_cast<std::size_t>(core)); }
  // Undoes a tentative give(): owner and acquisition time as they were.
  void restore(int core, AppId owner, std::uint64_t acquiredAt);

  std::vector<int> coresOf(AppId app) const;  // core ids, ascending
  std::vector<int> cpusOf(AppId app) const;   // Linux CPUs, ascending
  CoreCount count(AppId app) const;
  int pimOn(AppId app, int stack) const;
  void releaseAll(AppId app);  // to the BE pool

 private:
  const Topology* topology_;
  std::vector<AppId> owner_;
  std::vector<std::uint64_t> acquired_;
  std::uint64_t clock_ = 0;
};

}  // namespace pimcloud
