// The agent binary end to end on this machine: a config, a latency file written while it
// runs, a cgroup tree in a temporary directory, and a real child process to manage.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "backend/Sysfs.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::string s;
  pimcloud::readFile(p.string(), s);
  return s;
}

TEST(AgentRun, ManagesAChildThroughCgroupFilesAndLogsDecisions) {
  char tmpl[] = "/tmp/pimcloud-agent-run-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const pid_t app = fork();
  ASSERT_GE(app, 0);
  if (app == 0) {
    execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  const nlohmann::json config = {
      {"policy", "pimcloud"},
      {"topology", {{"host_cpus", {0}}, {"stacks", {{1}}}}},
      {"sysfs_root", (dir / "sys").string()},  // no nodes: free memory unknown
      {"cgroup", {{"root", (dir / "cg").string()}, {"mode", "cpuset"}}},
      {"latency", (dir / "latency.jsonl").string()},
      {"control", (dir / "control.jsonl").string()},
      {"log", (dir / "decisions.jsonl").string()},
      {"summary", (dir / "summary.json").string()},
  };
  std::ofstream(dir / "agent.json") << config.dump(2);
  {
    std::ofstream lat(dir / "latency.jsonl");
    lat << nlohmann::json{{"event", "start"}, {"app", "svc"}, {"pid", app}, {"qos_ns", 1e7},
                          {"max_rps_host", 300}, {"max_rps_pim", 100}}
               .dump()
        << "\n";
  }
  const pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    execl(PIMCLOUD_AGENT_BINARY, "pimcloud-agent", "run", "--config",
          (dir / "agent.json").c_str(), "--duration-s", "3", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Violate QoS for a while, with a malformed line in between.
  for (int i = 0; i < 15; ++i) {
    std::ofstream lat(dir / "latency.jsonl", std::ios::app);
    lat << nlohmann::json{{"app", "svc"}, {"t_ns", i}, {"p99_ns", 5e7}, {"mean_ns", 2e7},
                          {"count", 100}, {"rps", 1000}}
               .dump()
        << "\n";
    if (i == 3) lat << "{broken\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  int status = 0;
  waitpid(agent, &status, 0);
  kill(app, SIGKILL);
  waitpid(app, nullptr, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(dir / "cg" / "lc-svc" / "cgroup.procs"), std::to_string(app));
  // Rank 1 of one app with M = 1: host CPU 0 first, then upsized onto the stack's CPU 1.
  EXPECT_EQ(slurp(dir / "cg" / "lc-svc" / "cpuset.cpus"), "0-1");
  const std::string log = slurp(dir / "decisions.jsonl");
  EXPECT_NE(log.find("\"event\":\"initial\""), std::string::npos);
  EXPECT_NE(log.find("\"event\":\"upsize\""), std::string::npos);
  EXPECT_NE(log.find("\"event\":\"input-error\""), std::string::npos);
  const auto summary = nlohmann::json::parse(slurp(dir / "summary.json"));
  EXPECT_GT(summary["apps"]["svc"]["intervals_violating_qos"].get<int>(), 0);
  fs::remove_all(dir);
}

TEST(AgentRun, ACrashLeavesItsStackInTheLog) {
  char tmpl[] = "/tmp/pimcloud-agent-crash-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  const nlohmann::json config = {
      {"policy", "default"},
      {"topology", {{"host_cpus", {0}}, {"stacks", {{1}}}}},
      {"sysfs_root", (dir / "sys").string()},
      {"cgroup", {{"root", (dir / "cg").string()}, {"mode", "cpuset"}}},
      {"latency", (dir / "latency.jsonl").string()},
      {"control", (dir / "control.jsonl").string()},
      {"log", (dir / "decisions.jsonl").string()},
  };
  std::ofstream(dir / "agent.json") << config.dump(2);
  const pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    const int log = ::open((dir / "agent.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(log, STDERR_FILENO);
    execl(PIMCLOUD_AGENT_BINARY, "pimcloud-agent", "run", "--config",
          (dir / "agent.json").c_str(), "--duration-s", "10", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Once it logs its start its handlers are in place; then it aborts (as glibc does on a
  // corrupt heap).
  for (int i = 0; i < 200 && slurp(dir / "decisions.jsonl").find("start") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::kill(agent, SIGABRT);
  int status = 0;
  ASSERT_EQ(::waitpid(agent, &status, 0), agent);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) << status;
  const std::string log = slurp(dir / "agent.log");
  EXPECT_NE(log.find("fatal signal, its stack:"), std::string::npos) << log;
  EXPECT_NE(log.find("pimcloud-agent("), std::string::npos) << log;  // its own frames
  fs::remove_all(dir);
}

TEST(AgentRun, CheckNamesTheBadField) {
  char tmpl[] = "/tmp/pimcloud-agent-check-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  std::ofstream(dir / "bad.json") << R"({"policy": "nope"})";
  const std::string cmd = std::string(PIMCLOUD_AGENT_BINARY) + " check --config " +
                          (dir / "bad.json").string() + " 2> " + (dir / "err").string();
  const int rc = std::system(cmd.c_str());
  EXPECT_NE(rc, 0);
  EXPECT_NE(slurp(dir / "err").find("field \"policy\": \"nope\" is not a policy"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
