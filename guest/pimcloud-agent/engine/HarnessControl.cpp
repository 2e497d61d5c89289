#include "engine/HarnessControl.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pimcloud {

void FileHarnessControl::send(const std::string& jsonLine) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // the harness may not listen; the agent goes on
  const std::string line = jsonLine + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

std::string sendServiceCommand(const std::string& socketPath, const std::string& command) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socketPath.size() >= sizeof addr.sun_path) return socketPath + ": path too long";
  std::memcpy(addr.sun_path, socketPath.c_str(), socketPath.size());
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return socketPath + ": " + std::strerror(errno);
  std::string error;
  if (::sendto(fd, command.data(), command.size(), MSG_DONTWAIT,
               reinterpret_cast<sockaddr*>(&addr), sizeof addr) < 0) {
    error = socketPath + ": " + std::strerror(errno);
  }
  ::close(fd);
  return error;
}

}  // namespace pimcloud
