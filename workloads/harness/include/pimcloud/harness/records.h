// Per-request latency records and their two files: Tailbench's lats.bin and a tidy CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pimcloud::harness {

struct RequestRecord {
  std::uint64_t request_id = 0;
  std::uint32_t thread = 0;        // server worker index (0..threads-1)
  std::uint64_t scheduled_ns = 0;  // planned arrival (CLOCK_MONOTONIC)
  std::uint64_t start_ns = 0;      // a worker began serving
  std::uint64_t end_ns = 0;        // the answer was ready (or received, in TCP client mode)
  std::uint64_t service_ns = 0;    // time inside Service::serve
  std::uint64_t serial_ns = 0;       // of it, inside the service's serial section (Response)
  std::uint64_t serial_wait_ns = 0;  // of it, waiting to enter that section
  // The load generator put it in the work queue (0: not known, as in TCP client mode).
  // Between scheduled_ns and start_ns: what precedes it is the generator's lateness,
  // what follows it the queue proper (and, for a request that finds a worker idle, the
  // worker's wake-up).
  std::uint64_t released_ns = 0;

  // Queue = waiting before service, from the scheduled arrival.
  std::uint64_t queue_ns() const { return start_ns > scheduled_ns ? start_ns - scheduled_ns : 0; }
  // Sojourn = completion minus *scheduled* arrival, so it always covers queue and service.
  std::uint64_t sojourn_ns() const { return end_ns > scheduled_ns ? end_ns - scheduled_ns : 0; }
};

// lats.bin: per request, in request-id order, three native-endian (little on x86) uint64:
// queue ns, service ns, sojourn ns. No header. Written atomically (temp file + rename).
void write_lats_bin(const std::string& path, const std::vector<RequestRecord>& records);

struct LatsTriple {
  std::uint64_t queue_ns, service_ns, sojourn_ns;
};
std::vector<LatsTriple> read_lats_bin(const std::string& path);

// requests.csv: header then one row per request:
// request_id,thread,scheduled_ns,start_ns,end_ns,queue_ns,service_ns,sojourn_ns,serial_ns,
// serial_wait_ns,released_ns
void write_requests_csv(const std::string& path, const std::vector<RequestRecord>& records);

// The q-quantile (0..1) by nearest rank of an unsorted sample (copied); 0 if empty.
std::uint64_t quantile(std::vector<std::uint64_t> values, double q);

// Writes `text` to `path` atomically (temp file in the same folder, fsync, rename).
void atomic_write(const std::string& path, const std::string& text);

}  // namespace pimcloud::harness
