// The harness proper: load generator, server workers, monitor and control threads, in
// one process (integrated mode) or split by a loopback TCP connection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pimcloud/harness/arrivals.h"
#include "pimcloud/harness/early_stop.h"
#include "pimcloud/harness/records.h"
#include "pimcloud/harness/service.h"

namespace pimcloud::harness {

struct HarnessOptions {
  std::string app;
  std::string mode = "integrated";  // integrated | tcp | server | client
  LoadSchedule schedule = LoadSchedule::constant(100);
  double seconds = 0;         // measured region length (after warm-up)...
  long long requests = 0;     // ...or its number of requests
  long long warmup = 200;     // requests before the measured region
  int threads = 20;           // server workers
  long long prewarm = 0;      // requests served before the ready file (launch option)
  bool service_started = false;  // Service::start done at launch (not an option)
  std::uint64_t seed = 1;
  std::string out_dir;        // lats.bin, requests.csv, summary.json
  std::string stats_file;     // live statistics, one JSON line per interval
  std::string stats_socket;   // same lines as UNIX datagrams to this path
  std::string tids_file;      // {"app":..,"pid":..,"tids":[..]} once workers run
  std::string control_socket; // UNIX datagram socket the harness binds for commands
  std::string control_file;   // the agent's JSON-lines control file: answer its profile
                              // requests for this app (profiling.h)
  std::string ready_file;     // created once the service has loaded its data...
  std::string start_file;     // ...then the harness waits for this file before any load
  std::string done_file;      // a line here once the measured region's last request is done
                              // (a gem5 run switches to detailed cores, or checkpoints,
                              // in between); its text may carry the run's own options
  std::uint64_t interval_ns = 100'000'000;
  bool gem5 = false;          // m5 work_begin/work_end and dump_reset_stats
  std::uint64_t gem5_work_type = 0;  // gem5 work item type of this service's requests
  long long check_every = 0;  // check every Nth answer (0 = never)
  bool log_answers = false;   // keep checked answers (answers.tsv in out_dir)
  EarlyStopRule early_stop;   // integrated mode: end the measured region once certain
  std::string host = "127.0.0.1";
  int port = 0;               // server: 0 = any free port (printed); client: required
  ServiceArgs service;
};

// Serves `o.prewarm` requests on `o.threads` threads, worker i on the service's worker i,
// before the service reports ready: in a gem5 app checkpoint their page faults, heap
// arenas and engine caches are then made on the fast atomic cores, so a restored run
// starts warm but for the CPU caches. Its requests come from their own random stream (the
// run's requests stay the same, unless the service's make_request keeps a state of its
// own, as speech's pick=cycle does); the service must be started. Returns the number served.
long long prewarm(Service& service, const HarnessOptions& o);

// Parses the command line; throws std::invalid_argument naming the option and the fix.
HarnessOptions parse_options(const std::string& app, const std::vector<std::string>& args);
std::string usage(const std::string& app);

struct RunResult {
  std::vector<RequestRecord> records;  // measured region only, by request id
  std::uint64_t generated = 0;         // warm-up included
  std::uint64_t checked = 0;
  std::uint64_t failed = 0;
  std::uint64_t measured_ns = 0;       // first to last scheduled arrival of the region
  // CPU time of the whole harness process (generator, workers, checks, monitors) from the
  // first measured arrival until every answer: the cores a request costs beyond its
  // service time (integrated mode; 0 in the others).
  std::uint64_t measured_cpu_ns = 0;
  // Of it, the load generator's: one thread makes, times and hands over every request in
  // turn, so its CPU a request bounds the load it can offer (from the first measured
  // arrival to the last one it handed over, its sleeps until arrivals left out; integrated
  // mode).
  std::uint64_t generator_cpu_ns = 0;
  std::vector<std::string> live_lines; // every live statistics line, in order
  std::vector<std::string> answers;    // "id TAB request TAB response" of checked requests
  std::vector<std::string> profiles;   // JSON object per answered profile request
  std::string service_summary = "{}";
  std::string early_stop;              // summary.json's "early_stop" (empty: not asked)
};

// Runs one experiment. Integrated: generator and workers in this process. "tcp": the same
// over a loopback connection inside this process. "client" connects to a "server".
RunResult run(Service& service, const HarnessOptions& options);
// Creates options.ready_file (with our pid) if set, then waits until options.start_file
// exists (if set) or SIGINT/SIGTERM; returns false when interrupted.
bool wait_for_start(const HarnessOptions& options);

// Options that do not change the loaded service: a start file may give them, so that one
// loaded service (a gem5 app checkpoint) serves runs with different loads, lengths, seeds.
// Options that shape the service (--mode, --threads, --data, --opt, ...) are refused there.
bool is_run_option(const std::string& flag);

// The launch options with the start file's text (options separated by white space) over
// them: its --rps or --schedule replaces the launch's load. Throws std::invalid_argument
// naming a refused or bad option, or a measured region neither of them gives.
HarnessOptions with_start_options(const std::string& app, const std::vector<std::string>& launch,
                                  const std::string& start_text);

// How many measured arrivals early stop makes room for before the measured region: the
// request count, or the region's length at the schedule's highest rate (+25 % and 64),
// at most 2^22.
std::size_t expected_measured_arrivals(const HarnessOptions& options);

// "server": serves one client's requests over TCP until it disconnects.
void run_server(Service& service, const HarnessOptions& options);

// Writes lats.bin, requests.csv and summary.json into options.out_dir.
void write_outputs(const HarnessOptions& options, const RunResult& result);
std::string summary_json(const HarnessOptions& options, const RunResult& result);

// main() of a service binary: parse, build the service, run, write outputs.
int harness_main(const std::string& app, ServiceFactory factory, int argc, char** argv);

}  // namespace pimcloud::harness
