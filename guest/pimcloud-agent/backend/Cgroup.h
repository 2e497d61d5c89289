// cgroup v2 under one root the agent owns:
//   <root>/lc-<app>/  one per LC app: cpuset.cpus, cgroup.procs
//   <root>/be/        the best-effort jobs (placed there by whoever starts them):
//                     cpuset.cpus = the BE pool, cpu.max = throttle, cgroup.freeze when
//                     the pool is empty (an empty cpuset.cpus would mean "inherit all").
// Files are written whole, in one write, as the kernel wants.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend/Machine.h"

namespace pimcloud {

class CgroupTree {
 public:
  explicit CgroupTree(std::string root) : root_(std::move(root)) {}

  // Creates the root and enables the cpuset and cpu controllers for its children.
  Status prepare();
  Status setAppCpus(const std::string& app, const std::vector<int>& cpus);
  Status addProcess(const std::string& app, int pid);
  Status setBeCpus(const std::vector<int>& cpus);
  // cgroup.events' "populated": false once every process of the app's cgroup exited;
  // nullopt when the cgroup or the field is missing.
  std::optional<bool> populated(const std::string& app) const;
  // Removes an app's (empty) cgroup, so that no cpuset outlives its app.
  Status removeApp(const std::string& app);
  // fraction of the BE pool's CPU time (<= 0: unlimited); period 100 ms.
  Status setBeQuota(double fraction, std::size_t beCpus);

  std::string appDir(const std::string& app) const { return root_ + "/lc-" + app; }
  std::string beDir() const { return root_ + "/be"; }

 private:
  Status ensureDir(const std::string& dir);
  const std::string root_;
};

// Writes the whole text with one write(2); the error names the file and errno.
Status writeControlFile(const std::string& path, const std::string& text);

}  // namespace pimcloud
