// Internal: the loopback TCP framing. Little-endian fixed headers, then the body.
//   request:  u64 id, u64 scheduled_ns, u32 body_len, body
//   response: u64 id, u64 start_ns, u64 end_ns, u64 service_ns, u32 worker, u32 body_len, body
#pragma once

#include <cstdint>
#include <string>

namespace pimcloud::harness::detail {

struct RequestFrame {
  std::uint64_t id = 0, scheduled_ns = 0;
  std::string body;
};
struct ResponseFrame {
  std::uint64_t id = 0, start_ns = 0, end_ns = 0, service_ns = 0;
  std::uint32_t worker = 0;
  std::string body;
};

// All return false on a closed or broken connection.
bool send_request(int fd, const RequestFrame& frame);
bool recv_request(int fd, RequestFrame& frame);
bool send_response(int fd, const ResponseFrame& frame);
bool recv_response(int fd, ResponseFrame& frame);

// Listening socket on host:port (port 0 = any); returns fd and sets port to the real one.
int listen_tcp(const std::string& host, int& port);
int connect_tcp(const std::string& host, int port);

}  // namespace pimcloud::harness::detail
