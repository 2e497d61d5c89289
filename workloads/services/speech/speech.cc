// Speech recognition (the paper's Sphinx): PocketSphinx with its en-us acoustic model
// decodes one utterance (synthesised with espeak-ng at data-build time, 16 kHz 16-bit mono)
// per request. By default it searches the request domain's own JSGF grammar (built from
// the transcripts at data-build time, as a deployed command recogniser has one);
// --opt lm=trigram uses a trigram model of the same sentences, --opt lm=full the general
// en-us language model and CMU dictionary (the heaviest, Tailbench-like search).
// Decoders are not thread-safe and large, so a pool of them (default one per worker) is
// shared by the workers.
#include <pocketsphinx.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "pimcloud/harness/runner.h"
#include "pimcloud/harness/wake_event.h"

namespace {

using namespace pimcloud::harness;

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

std::size_t edit_distance(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

class Speech final : public Service {
 public:
  explicit Speech(const ServiceArgs& args)
      : model_(args.option("model", "/usr/share/pocketsphinx/model/en-us")),
        decoders_wanted_(static_cast<int>(args.option_int("decoders", 0))),
        tuning_(words(args.option("ps", ""))),  // extra decoder flags, e.g. "-beam 1e-30"
        cycle_(args.option("pick", "random") == "cycle") {
    if (tuning_.size() % 2) throw std::invalid_argument("--opt ps=... needs -flag value pairs");
    const std::string pick = args.option("pick", "random");
    if (pick != "random" && pick != "cycle") {
      throw std::invalid_argument("--opt pick=" + pick + ": use random or cycle (each "
                                  "utterance in turn, for a word error rate over the set)");
    }
    const std::string dir = args.data_dir + "/speech";
    lm_ = args.option("lm", "grammar");
    if (lm_ == "trigram" || lm_ == "grammar") {  // the data set's own domain models
      lm_file_ = dir + (lm_ == "trigram" ? "/requests.lm" : "/requests.gram");
      dict_file_ = dir + "/requests.dict";
      if (!std::ifstream(lm_file_) || !std::ifstream(dict_file_)) {
        throw std::runtime_error(lm_file_ + " or requests.dict is missing; rebuild the data "
                                 "set with `pimcloud workload data --only speech`");
      }
    } else if (lm_ == "full") {
      lm_file_ = model_ + "/en-us.lm.bin";
      dict_file_ = model_ + "/cmudict-en-us.dict";
    } else {
      throw std::invalid_argument("--opt lm=" + lm_ + ": use grammar or trigram (the data "
                                  "set's domain models) or full (the general en-us model)");
    }
    std::ifstream transcripts(dir + "/transcripts.txt");
    if (!transcripts) {
      throw std::runtime_error(dir + "/transcripts.txt is missing; build it with "
                               "`pimcloud workload data --only speech`");
    }
    std::string line;
    while (std::getline(transcripts, line)) {
      char name[16];
      std::snprintf(name, sizeof name, "%03zu.raw", transcripts_.size());
      std::ifstream raw(dir + "/" + name, std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(raw)),
                              std::istreambuf_iterator<char>());
      std::vector<std::int16_t> pcm(bytes.size() / 2);
      std::memcpy(pcm.data(), bytes.data(), pcm.size() * 2);
      if (pcm.empty()) throw std::runtime_error(dir + "/" + name + " is missing or empty");
      audio_.push_back(std::move(pcm));
      transcripts_.push_back(line);
    }
    if (audio_.empty()) throw std::runtime_error(dir + "/transcripts.txt is empty");
  }

  ~Speech() override {
    for (auto* d : all_) ps_free(d);
  }

  void start(int workers) override {
    const int n = decoders_wanted_ > 0 ? decoders_wanted_ : workers;
    all_.resize(static_cast<std::size_t>(n), nullptr);
    // Loading a decoder takes a while: load them two at a time.
    std::vector<std::thread> loaders;
    for (int t = 0; t < 2; ++t) {
      loaders.emplace_back([this, n, t] {
        for (int i = t; i < n; i += 2) all_[static_cast<std::size_t>(i)] = load_decoder();
      });
    }
    for (auto& l : loaders) l.join();
    for (auto* d : all_) {
      if (!d) throw std::runtime_error("PocketSphinx could not load its model from " + model_);
    }
    free_ = all_;
  }

  Request make_request(Rng& rng) override {
    const std::size_t index = cycle_ ? next_++ % audio_.size() : rng() % audio_.size();
    return {std::to_string(index)};
  }

  Response serve(const Request& request, int /*worker*/) override {
    const std::size_t index = std::stoul(request.body);
    ps_decoder_t* decoder = take();
    const auto& pcm = audio_[index];
    ps_start_utt(decoder);
    ps_process_raw(decoder, pcm.data(), pcm.size(), FALSE, TRUE);
    ps_end_utt(decoder);
    std::int32_t score = 0;
    const char* hyp = ps_get_hyp(decoder, &score);
    std::string text = hyp ? hyp : "";
    give_back(decoder);
    const auto ref = words(transcripts_[index]);
    const std::size_t errors = edit_distance(ref, words(text));
    {
      std::lock_guard lock(score_mutex_);
      ref_words_ += ref.size();
      word_errors_ += errors;
    }
    return {text};
  }

  bool check(const Request& /*request*/, const Response& response) override {
    return !response.body.empty();
  }

  std::string finish() override {
    std::lock_guard lock(score_mutex_);
    const double wer = ref_words_ ? static_cast<double>(word_errors_) /
                                        static_cast<double>(ref_words_)
                                  : 0.0;
    return "{\"engine\":\"pocketsphinx\",\"lm\":\"" + lm_ +
           "\",\"utterances\":" + std::to_string(audio_.size()) +
           ",\"decoders\":" + std::to_string(all_.size()) +
           ",\"reference_words\":" + std::to_string(ref_words_) +
           ",\"word_error_rate\":" + std::to_string(wer) + "}";
  }

 private:
  ps_decoder_t* load_decoder() {
    std::vector<std::string> args = {"-hmm", model_ + "/en-us",
                                     lm_ == "grammar" ? "-jsgf" : "-lm", lm_file_,
                                     "-dict", dict_file_, "-logfn", "/dev/null"};
    if (lm_ == "grammar") {
      // A grammar's search space is small: wide beams cost little, and with the default
      // ones the best path of some utterances is pruned before the final state (no answer).
      args.insert(args.end(), {"-beam", "1e-80", "-pbeam", "1e-80", "-wbeam", "1e-60"});
    }
    args.insert(args.end(), tuning_.begin(), tuning_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    cmd_ln_t* config = cmd_ln_parse_r(nullptr, ps_args(), static_cast<std::int32_t>(argv.size()),
                                      argv.data(), TRUE);
    if (!config) return nullptr;
    ps_decoder_t* decoder = ps_init(config);
    cmd_ln_free_r(config);
    return decoder;
  }

  ps_decoder_t* take() {
    std::unique_lock lock(pool_mutex_);
    pool_ready_.wait(lock, [&] { return !free_.empty(); });
    ps_decoder_t* d = free_.back();
    free_.pop_back();
    return d;
  }

  void give_back(ps_decoder_t* d) {
    {
      std::lock_guard lock(pool_mutex_);
      free_.push_back(d);
    }
    pool_ready_.notify_one();
  }

  std::string model_;
  int decoders_wanted_;
  std::vector<std::string> tuning_;
  bool cycle_;
  std::size_t next_ = 0;  // make_request runs on one thread
  std::string lm_, lm_file_, dict_file_;
  std::vector<std::vector<std::int16_t>> audio_;
  std::vector<std::string> transcripts_;
  std::vector<ps_decoder_t*> all_, free_;
  std::mutex pool_mutex_, score_mutex_;
  WakeEvent pool_ready_;  // not a condition variable: see wake_event.h
  std::size_t ref_words_ = 0, word_errors_ = 0;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<Speech>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("speech", make, argc, argv); }
