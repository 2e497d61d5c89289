// Real-time translation (the paper's Moses): English to Spanish with Apertium eng-spa.
// Each worker keeps one Apertium pipeline running (the stages of eng-spa.mode, each in
// null-flush mode -z), writes a sentence followed by NUL and reads the translation up to
// the next NUL, so a request pays for translation, not for starting ten processes.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
  explicit Pipeline(const std::string& command) {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe failed");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
    if (posix_spawn(&pid_, "/bin/sh", &actions, nullptr, const_cast<char**>(argv), environ) != 0) {
      throw std::runtime_error("cannot start the Apertium pipeline");
    }
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
  }
  ~Pipeline() {
    close(in_);  // end of input: every stage exits
    close(out_);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  std::string translate(const std::string& sentence) {
    // A trailing blank: lt-proc -z only emits the last unit once something follows it.
    const std::string msg = escape(sentence) + '\n' + '\0';
    for (std::size_t done = 0; done < msg.size();) {
      const ssize_t n = write(in_, msg.data() + done, msg.size() - done);
      if (n <= 0) throw std::runtime_error("the Apertium pipeline stopped");
      done += static_cast<std::size_t>(n);
    }
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

class Translate final : public Service {
 public:
  explicit Translate(const ServiceArgs& args)
      : pipeline_(null_flush_pipeline(
            args.option("mode", "/usr/share/apertium/modes/eng-spa.mode"))) {
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
    for (int i = 0; i < workers; ++i) {
      workers_.push_back(std::make_unique<Pipeline>(pipeline_));
      workers_.back()->translate("Hello.");  // load every stage's data before timing
    }
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
  std::string pipeline_;
  std::vector<std::string> sentences_;
  std::vector<std::unique_ptr<Pipeline>> workers_;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<Translate>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("translate", make, argc, argv); }
