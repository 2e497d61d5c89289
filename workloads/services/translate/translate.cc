// Real-time translation (the paper's Moses): English to Spanish with Apertium eng-spa.
// Each worker keeps one Apertium pipeline running (the stages of eng-spa.mode, each in
// null-flush mode -z), writes a sentence followed by NUL and reads the translation up to
// the next NUL, so a request pays for translation, not for starting ten processes.
// The pipelines share one start-up (--opt prefork=1, the default): worker 0's stages load
// their dictionaries and each then forks a copy a further worker (prefork.c), joined by
// FIFOs, so N workers cost one pipeline's load instead of N.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pimcloud/harness/runner.h"

extern char** environ;

namespace {

using namespace pimcloud::harness;

// The mode file's pipeline with every stage told to flush on NUL.
std::string null_flush_pipeline(const std::string& mode_file) {
  std::ifstream in(mode_file);
  if (!in) {
    throw std::runtime_error(mode_file + " is missing: install the Debian packages apertium "
                             "and apertium-eng-spa");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string mode = text.str();
  mode = std::regex_replace(mode, std::regex(R"(\$1)"), "-g");
  mode = std::regex_replace(mode, std::regex(R"(\$2)"), "");
  return std::regex_replace(
      mode,
      std::regex(R"(\b(lt-proc|apertium-tagger|apertium-pretransfer|apertium-transfer|lrx-proc|)"
                 R"(apertium-interchunk|apertium-postchunk|cg-proc) )"),
      "$1 -z ");
}

// The pipeline's stages, split at its pipes (the mode files quote paths, never a '|').
std::vector<std::string> stages_of(const std::string& pipeline) {
  std::vector<std::string> stages;
  std::size_t from = 0;
  for (std::size_t bar; (bar = pipeline.find('|', from)) != std::string::npos; from = bar + 1) {
    stages.push_back(pipeline.substr(from, bar - from));
  }
  stages.push_back(pipeline.substr(from));
  return stages;
}

// The pipeline with each stage told where it stands, for prefork.c: stage i of `copies`.
std::string preforking_pipeline(const std::string& pipeline, const std::string& fifo_dir,
                                int copies) {
  const auto stages = stages_of(pipeline);
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto first = stages[i].find_first_not_of(" \t\n");
    if (first == std::string::npos) {
      throw std::invalid_argument("the mode's pipeline has an empty stage: " + pipeline);
    }
    if (i > 0) out += " |";
    out += " PIMCLOUD_PREFORK=" + fifo_dir + ":" + std::to_string(i) + ":" +
           std::to_string(copies) + " " + stages[i].substr(first);
  }
  return out;
}

// LD_PRELOAD with `library` first and whatever is preloaded already (a profiler's) after.
std::string preload(const std::string& library) {
  const char* already = std::getenv("LD_PRELOAD");
  return "LD_PRELOAD=" + library + (already && *already ? ":" + std::string(already) : "");
}

// prefork.c's library, built and installed beside this program.
std::string prefork_library() {
  const auto here = std::filesystem::read_symlink("/proc/self/exe").parent_path();
  const auto library = here / "libpimcloud-prefork.so";
  if (!std::filesystem::exists(library)) {
    throw std::runtime_error(library.string() + " is missing: build it with the service "
                             "(make cxx), or start every pipeline on its own with "
                             "--opt prefork=0");
  }
  return library.string();
}

std::size_t word_count(const std::string& s) {
  std::istringstream in(s);
  std::size_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

// Characters that mean something in Apertium's stream format are escaped.
std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (std::string_view("[]{}^$/\\@<>").find(c) != std::string_view::npos) out += '\\';
    if (c != '\0') out += c;
  }
  return out;
}

class Pipeline {
 public:
  // `env`: extra NAME=value entries for the pipeline's processes.
  Pipeline(const std::string& command, const std::vector<std::string>& env) {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    std::vector<char*> envp;
    for (const auto& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
    for (char** e = environ; *e != nullptr; ++e) {  // one entry a name: `env`'s wins
      const std::string_view entry(*e);
      const bool replaced = std::any_of(env.begin(), env.end(), [&](const std::string& mine) {
        return entry.substr(0, entry.find('=') + 1) == mine.substr(0, mine.find('=') + 1);
      });
      if (!replaced) envp.push_back(*e);
    }
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, "/bin/sh", &actions, nullptr, const_cast<char**>(argv),
                    envp.data()) != 0) {
      throw std::runtime_error("cannot start the Apertium pipeline");
    }
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  // A forked copy's ends: the FIFOs its first and last stages read and write.
  Pipeline(int in, int out) : in_(in), out_(out) {}
  ~Pipeline() {
    close(in_);  // end of input: every stage exits
    close(out_);
    int status = 0;
    if (pid_ > 0) waitpid(pid_, &status, 0);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::string translate(const std::string& sentence) {
    send(sentence);
    return receive();
  }

  void send(const std::string& sentence) {
    // A trailing blank: lt-proc -z only emits the last unit once something follows it.
    const std::string msg = escape(sentence) + '\n' + '\0';
    for (std::size_t done = 0; done < msg.size();) {
      const ssize_t n = write(in_, msg.data() + done, msg.size() - done);
      if (n <= 0) throw std::runtime_error("the Apertium pipeline stopped");
      done += static_cast<std::size_t>(n);
    }
  }

  std::string receive() {
    std::string answer;
    char buf[4096];
    for (;;) {
      if (!pending_.empty()) {
        const auto nul = pending_.find('\0');
        if (nul != std::string::npos) {
          answer = pending_.substr(0, nul);
          pending_.erase(0, nul + 1);
          while (!answer.empty() && answer.back() == '\n') answer.pop_back();
          return answer;
        }
      }
      const ssize_t n = read(out_, buf, sizeof buf);
      if (n <= 0) throw std::runtime_error("the Apertium pipeline stopped");
      pending_.append(buf, static_cast<std::size_t>(n));
    }
  }

 private:
  pid_t pid_ = 0;
  int in_ = -1, out_ = -1;
  std::string pending_;
};

// The copies' FIFOs, <path>/<copy>.<stage>, in a folder removed with this object (an
// opened FIFO stays open).
struct FifoFolder {
  std::string path;
  FifoFolder() {
    char dir[] = "/tmp/pimcloud-translate-XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("cannot make a folder in /tmp");
    path = dir;
  }
  ~FifoFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  FifoFolder(const FifoFolder&) = delete;
  FifoFolder& operator=(const FifoFolder&) = delete;

  std::string fifo(int copy, std::size_t stage) const {
    return path + "/" + std::to_string(copy) + "." + std::to_string(stage);
  }
  void make(int copy, std::size_t stage) const {
    if (mkfifo(fifo(copy, stage).c_str(), 0600) != 0) {
      throw std::runtime_error("cannot make the FIFO " + fifo(copy, stage));
    }
  }
  // Lets copies `from`.. that wait to open their FIFOs go on and then end: every FIFO
  // held open at both ends for a moment, then closed (each stage then reads end of input).
  void release(int from, int copies, std::size_t stages) const {
    std::vector<int> held;
    for (int k = from; k < copies; ++k) {
      for (std::size_t s = 0; s <= stages; ++s) {
        const int fd = open(fifo(k, s).c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) held.push_back(fd);
      }
    }
    usleep(100000);
    for (const int fd : held) close(fd);
  }
};

// A copy's two ends, once its first stage reads and within `deadline` its last answers:
// the read end opens at once (O_NONBLOCK), the write end once the first stage's copy has
// opened its FIFO, and "Hello." goes through before the ends block again.
std::unique_ptr<Pipeline> connect_copy(const std::string& first, const std::string& last,
                                       std::chrono::steady_clock::time_point deadline) {
  const auto left_ms = [&] {
    return std::max<long long>(0, std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now()).count());
  };
  const int out = open(last.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (out < 0) throw std::runtime_error("cannot open " + last + ": " + std::strerror(errno));
  int in;
  while ((in = open(first.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
    const int error = errno;
    if (error != ENXIO || left_ms() == 0) {  // ENXIO: its first stage has not opened it yet
      close(out);
      throw std::runtime_error(error == ENXIO ? "its first stage never read"
                                              : "cannot open " + first + ": " +
                                                    std::strerror(error));
    }
    usleep(1000);
  }
  fcntl(in, F_SETFL, 0);
  auto copy = std::make_unique<Pipeline>(in, out);
  copy->send("Hello.");
  pollfd answer{out, POLLIN, 0};
  int ready;
  do {
    ready = poll(&answer, 1, static_cast<int>(std::min<long long>(left_ms(), INT_MAX)));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) throw std::runtime_error("no answer through its stages");
  fcntl(out, F_SETFL, 0);
  return copy;
}

class Translate final : public Service {
 public:
  explicit Translate(const ServiceArgs& args)
      : pipeline_(null_flush_pipeline(
            args.option("mode", "/usr/share/apertium/modes/eng-spa.mode"))),
        prefork_(args.option_int("prefork", 1) != 0),
        // A stage that reads its input some way prefork.c does not see never forks; its
        // copies' FIFOs would then wait for ever, so a copy gets this long to answer.
        copy_wait_(std::chrono::milliseconds(args.option_int("prefork_wait_ms", 120000))) {
    std::ifstream in(args.data_dir + "/translate/sentences.txt");
    if (!in) {
      throw std::runtime_error(args.data_dir + "/translate/sentences.txt is missing; build it "
                               "with `pimcloud workload data --only translate`");
    }
    // --opt max_words=N: only sentences of at most N words (a request's cost grows faster
    // than its length: the transfer stages work on chunks of the whole sentence).
    const auto max_words = args.option_int("max_words", 0);
    if (max_words < 0) throw std::invalid_argument("--opt max_words must be 0 (all) or more");
    std::string line;
    std::size_t all = 0;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      ++all;
      if (max_words == 0 || word_count(line) <= static_cast<std::size_t>(max_words)) {
        sentences_.push_back(line);
      }
    }
    if (sentences_.empty()) {
      throw std::invalid_argument("--opt max_words=" + std::to_string(max_words) + ": none of the " +
                                  std::to_string(all) + " sentences is that short; raise it");
    }
    signal(SIGPIPE, SIG_IGN);
  }

  void start(int workers) override {
    if (!prefork_ || workers == 1) {
      for (int i = 0; i < workers; ++i) {
        workers_.push_back(std::make_unique<Pipeline>(pipeline_, std::vector<std::string>{}));
        workers_.back()->translate("Hello.");  // load every stage's data before timing
      }
      return;
    }
    start_preforked(workers);
  }

  Request make_request(Rng& rng) override { return {sentences_[rng() % sentences_.size()]}; }

  Response serve(const Request& request, int worker) override {
    return {workers_[static_cast<std::size_t>(worker)]->translate(request.body)};
  }

  bool check(const Request& request, const Response& response) override {
    return !response.body.empty() && response.body != request.body;
  }

  std::string finish() override {
    return "{\"engine\":\"apertium eng-spa\",\"sentences\":" + std::to_string(sentences_.size()) +
           "}";
  }

 private:
  // Worker 0's pipeline loads; its "Hello." reaches every stage, whose first read forks
  // the other workers' copies (prefork.c); each copy's ends are FIFOs made here, and each
  // copy must answer "Hello." as worker 0 did.
  void start_preforked(int workers) {
    const std::string library = prefork_library();
    const FifoFolder fifos;
    const std::size_t stages = stages_of(pipeline_).size();
    for (int k = 1; k < workers; ++k) {
      for (std::size_t s = 0; s <= stages; ++s) fifos.make(k, s);
    }
    workers_.push_back(std::make_unique<Pipeline>(
        preforking_pipeline(pipeline_, fifos.path, workers),
        std::vector<std::string>{preload(library)}));
    const std::string hello = workers_.back()->translate("Hello.");
    const auto deadline = std::chrono::steady_clock::now() + copy_wait_;
    for (int k = 1; k < workers; ++k) {
      try {
        workers_.push_back(connect_copy(fifos.fifo(k, 0), fifos.fifo(k, stages), deadline));
        const std::string answer = workers_.back()->receive();
        if (answer != hello) {
          throw std::runtime_error("answered \"Hello.\" with \"" + answer + "\", worker 0 "
                                   "with \"" + hello + "\"");
        }
      } catch (const std::exception& e) {
        fifos.release(k, workers, stages);
        throw std::runtime_error("worker " + std::to_string(k) + "'s copy of the Apertium "
                                 "pipeline did not start: " + e.what() + " (prefork.c; "
                                 "--opt prefork=0 starts every pipeline on its own)");
      }
    }
  }

  std::string pipeline_;
  bool prefork_;
  std::chrono::milliseconds copy_wait_;
  std::vector<std::string> sentences_;
  std::vector<std::unique_ptr<Pipeline>> workers_;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<Translate>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("translate", make, argc, argv); }
