// The agent's side of the harness protocol: profile and replication requests as JSON
// lines in the control file the harness reads, and datagrams to a service's own control
// socket.
#pragma once

#include <string>

namespace pimcloud {

// Requests from the agent to the harness. Replication goes to the service's own control
// socket when the config names one (a datagram "replicate NODE" or "drop NODE", as
// workloads/harness reads it); every request is also one JSON line in the control file:
//   {"t_ns":..,"event":"profile","app":"xapian","core_type":"host","cpu":0,"duration_ms":500}
//   {"t_ns":..,"event":"profile-done","app":"xapian","max_rps_host":..,"max_rps_pim":..}
//   {"t_ns":..,"event":"replicate","app":"xapian","node":2}
//   {"t_ns":..,"event":"drop-replicas","app":"xapian","node":2}
class HarnessControl {
 public:
  virtual ~HarnessControl() = default;
  virtual void send(const std::string& jsonLine) = 0;
};

class FileHarnessControl : public HarnessControl {
 public:
  explicit FileHarnessControl(std::string path) : path_(std::move(path)) {}
  void send(const std::string& jsonLine) override;  // appends one line with one write()

 private:
  std::string path_;
};

// Sends `command` ("replicate NODE", "drop NODE") as one datagram to the service's UNIX
// socket at `socketPath`, without waiting; "" on success, else why it failed.
std::string sendServiceCommand(const std::string& socketPath, const std::string& command);

}  // namespace pimcloud
