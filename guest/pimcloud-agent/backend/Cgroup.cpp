#include "backend/Cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include "backend/Sysfs.h"

namespace pimcloud {

Status writeControlFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::failure(path + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return Status::failure(path + ": writing \"" + text + "\": " + std::strerror(err),
                           err == ESRCH);
  }
  return Status::success();
}

Status CgroupTree::ensureDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::failure(dir + ": cannot create the cgroup: " + std::strerror(errno));
  }
  return Status::success();
}

Status CgroupTree::prepare() {
  // The parent must delegate cpuset and cpu before the root can have them.
  const auto slash = root_.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    const std::string parent = root_.substr(0, slash) + "/cgroup.subtree_control";
    if (::access(parent.c_str(), F_OK) == 0) writeControlFile(parent, "+cpuset +cpu");
  }
  if (Status s = ensureDir(root_); !s.ok) return s;
  if (Status s = writeControlFile(root_ + "/cgroup.subtree_control", "+cpuset +cpu"); !s.ok) return s;
  return ensureDir(beDir());
}

Status CgroupTree::setAppCpus(const std::string& app, const std::vector<int>& cpus) {
  if (Status s = ensureDir(appDir(app)); !s.ok) return s;
  if (cpus.empty()) return Status::failure("refusing an empty cpuset for " + app);
  return writeControlFile(appDir(app) + "/cpuset.cpus", formatCpuList(cpus));
}

Status CgroupTree::addProcess(const std::string& app, int pid) {
  if (Status s = ensureDir(appDir(app)); !s.ok) return s;
  Status s = writeControlFile(appDir(app) + "/cgroup.procs", std::to_string(pid));
  if (!s.ok && s.error.find("No such process") != std::string::npos) s.gone = true;
  return s;
}

std::optional<bool> CgroupTree::populated(const std::string& app) const {
  std::string text;
  if (!readFile(appDir(app) + "/cgroup.events", text)) return std::nullopt;
  const auto at = text.find("populated ");
  if (at == std::string::npos || at + 10 >= text.size()) return std::nullopt;
  return text[at + 10] == '1';
}

Status CgroupTree::removeApp(const std::string& app) {
  if (::rmdir(appDir(app).c_str()) != 0 && errno != ENOENT) {
    return Status::failure(appDir(app) + ": cannot remove the cgroup: " + std::strerror(errno));
  }
  return Status::success();
}

Status CgroupTree::setBeCpus(const std::vector<int>& cpus) {
  if (Status s = ensureDir(beDir()); !s.ok) return s;
  if (cpus.empty()) return writeControlFile(beDir() + "/cgroup.freeze", "1");
  if (Status s = writeControlFile(beDir() + "/cpuset.cpus", formatCpuList(cpus)); !s.ok) return s;
  return writeControlFile(beDir() + "/cgroup.freeze", "0");
}

Status CgroupTree::setBeQuota(double fraction, std::size_t beCpus) {
  if (Status s = ensureDir(beDir()); !s.ok) return s;
  constexpr long kPeriodUs = 100000;
  if (fraction <= 0 || beCpus == 0) return writeControlFile(beDir() + "/cpu.max", "max 100000");
  const long quota = std::max(1000L, static_cast<long>(std::llround(
                                         fraction * kPeriodUs * static_cast<double>(beCpus))));
  return writeControlFile(beDir() + "/cpu.max",
                          std::to_string(quota) + " " + std::to_string(kPeriodUs));
}

}  // namespace pimcloud
