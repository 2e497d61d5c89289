#include "tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace pimcloud::harness::detail {
namespace {

bool write_all(int fd, const void* data, std::size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len) {
    const ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t len) {
  char* p = static_cast<char*>(data);
  while (len) {
    const ssize_t n = recv(fd, p, len, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= static_cast<std::size_t>(n);
  }
  return true;
}

constexpr std::uint32_t kMaxBody = 64u << 20;

sockaddr_in address(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    throw std::invalid_argument("--host " + host + " is not an IPv4 address (e.g. 127.0.0.1)");
  }
  return addr;
}

}  // namespace

bool send_request(int fd, const RequestFrame& f) {
  std::string buf(20 + f.body.size(), '\0');
  const auto len = static_cast<std::uint32_t>(f.body.size());
  std::memcpy(buf.data(), &f.id, 8);
  std::memcpy(buf.data() + 8, &f.scheduled_ns, 8);
  std::memcpy(buf.data() + 16, &len, 4);
  std::memcpy(buf.data() + 20, f.body.data(), f.body.size());
  return write_all(fd, buf.data(), buf.size());
}

bool recv_request(int fd, RequestFrame& f) {
  char head[20];
  if (!read_all(fd, head, sizeof head)) return false;
  std::uint32_t len = 0;
  std::memcpy(&f.id, head, 8);
  std::memcpy(&f.scheduled_ns, head + 8, 8);
  std::memcpy(&len, head + 16, 4);
  if (len > kMaxBody) return false;
  f.body.resize(len);
  return read_all(fd, f.body.data(), len);
}

bool send_response(int fd, const ResponseFrame& f) {
  std::string buf(40 + f.body.size(), '\0');
  const auto len = static_cast<std::uint32_t>(f.body.size());
  std::memcpy(buf.data(), &f.id, 8);
  std::memcpy(buf.data() + 8, &f.start_ns, 8);
  std::memcpy(buf.data() + 16, &f.end_ns, 8);
  std::memcpy(buf.data() + 24, &f.service_ns, 8);
  std::memcpy(buf.data() + 32, &f.worker, 4);
  std::memcpy(buf.data() + 36, &len, 4);
  std::memcpy(buf.data() + 40, f.body.data(), f.body.size());
  return write_all(fd, buf.data(), buf.size());
}

bool recv_response(int fd, ResponseFrame& f) {
  char head[40];
  if (!read_all(fd, head, sizeof head)) return false;
  std::uint32_t len = 0;
  std::memcpy(&f.id, head, 8);
  std::memcpy(&f.start_ns, head + 8, 8);
  std::memcpy(&f.end_ns, head + 16, 8);
  std::memcpy(&f.service_ns, head + 24, 8);
  std::memcpy(&f.worker, head + 32, 4);
  std::memcpy(&len, head + 36, 4);
  if (len > kMaxBody) return false;
  f.body.resize(len);
  return read_all(fd, f.body.data(), len);
}

int listen_tcp(const std::string& host, int& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = address(host, port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 16) != 0) {
    const int err = errno;
    close(fd);
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                             std::strerror(err) + " (choose another --port, or 0 for any)");
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port = ntohs(addr.sin_port);
  return fd;
}

int connect_tcp(const std::string& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = address(host, port);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    close(fd);
    throw std::runtime_error("cannot connect to " + host + ":" + std::to_string(port) + ": " +
                             std::strerror(err) + " (start the server first, same --port)");
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace pimcloud::harness::detail
