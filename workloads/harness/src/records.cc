#include "pimcloud/harness/records.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace pimcloud::harness {

void atomic_write(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno) +
                             " (check that its folder exists and is writable)");
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      close(fd);
      unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + path + ": " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  fsync(fd);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    throw std::runtime_error("cannot rename into " + path + ": " + std::strerror(err));
  }
}

void write_lats_bin(const std::string& path, const std::vector<RequestRecord>& records) {
  std::string bytes;
  bytes.resize(records.size() * 3 * sizeof(std::uint64_t));
  char* out = bytes.data();
  for (const auto& r : records) {
    const std::uint64_t triple[3] = {r.queue_ns(), r.service_ns, r.sojourn_ns()};
    std::memcpy(out, triple, sizeof triple);
    out += sizeof triple;
  }
  atomic_write(path, bytes);
}

std::vector<LatsTriple> read_lats_bin(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string bytes = buf.str();
  if (bytes.size() % sizeof(LatsTriple) != 0) {
    throw std::runtime_error(path + " is not a lats.bin: size " + std::to_string(bytes.size()) +
                             " is not a multiple of 24 bytes");
  }
  std::vector<LatsTriple> out(bytes.size() / sizeof(LatsTriple));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void write_requests_csv(const std::string& path, const std::vector<RequestRecord>& records) {
  std::string text =
      "request_id,thread,scheduled_ns,start_ns,end_ns,queue_ns,service_ns,sojourn_ns,serial_ns,"
      "serial_wait_ns,released_ns\n";
  text.reserve(text.size() + records.size() * 96);
  for (const auto& r : records) {
    text += std::to_string(r.request_id) + ',' + std::to_string(r.thread) + ',' +
            std::to_string(r.scheduled_ns) + ',' + std::to_string(r.start_ns) + ',' +
            std::to_string(r.end_ns) + ',' + std::to_string(r.queue_ns()) + ',' +
            std::to_string(r.service_ns) + ',' + std::to_string(r.sojourn_ns()) + ',' +
            std::to_string(r.serial_ns) + ',' + std::to_string(r.serial_wait_ns) + ',' +
            std::to_string(r.released_ns) + '\n';
  }
  atomic_write(path, text);
}

std::uint64_t quantile(std::vector<std::uint64_t> values, double q) {
  if (values.empty()) return 0;
  const double rank = std::ceil(q * static_cast<double>(values.size()));
  std::size_t k = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  k = std::min(k, values.size() - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

}  // namespace pimcloud::harness
