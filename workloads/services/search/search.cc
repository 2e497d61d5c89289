// Web search (the paper's Xapian): ranked BM25 retrieval of the top 10 documents of a
// Xapian index over a real text corpus (Debian's fortune collections). Queries are 1-3
// words drawn from a document (queries.tsv, made with the data set), all required.
#include <xapian.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pimcloud/harness/runner.h"

namespace {

using namespace pimcloud::harness;

constexpr unsigned kTop = 10;

class Search final : public Service {
 public:
  explicit Search(const ServiceArgs& args) : dir_(args.data_dir + "/search") {
    if (args.data_dir.empty()) {
      throw std::invalid_argument("search needs --data DIR (build it: pimcloud workload data)");
    }
    std::ifstream in(dir_ + "/queries.tsv");
    if (!in) {
      throw std::runtime_error(dir_ + "/queries.tsv is missing; build the data set with "
                               "`pimcloud workload data --out " + args.data_dir + "`");
    }
    std::string line;
    while (std::getline(in, line)) {
      const auto tab = line.find('\t');
      if (tab != std::string::npos) queries_.push_back(line);
    }
    if (queries_.empty()) throw std::runtime_error(dir_ + "/queries.tsv has no queries");
    Xapian::Database probe(dir_ + "/db");  // fail now, with the path, if the index is absent
  }

  void start(int workers) override {
    for (int i = 0; i < workers; ++i) {
      auto w = std::make_unique<Worker>(Worker{Xapian::Database(dir_ + "/db"), {}});
      w->parser.set_database(w->db);
      w->parser.set_stemmer(Xapian::Stem("english"));
      w->parser.set_stemming_strategy(Xapian::QueryParser::STEM_SOME);
      w->parser.set_default_op(Xapian::Query::OP_AND);
      workers_.push_back(std::move(w));
    }
  }

  // Request: "<expected doc id>\t<words>".
  Request make_request(Rng& rng) override { return {queries_[rng() % queries_.size()]}; }

  // Response: "<matches estimated>\t<doc id> <doc id> ..." (top 10 by BM25).
  Response serve(const Request& request, int worker) override {
    Worker& w = *workers_[static_cast<std::size_t>(worker)];
    const std::string words = request.body.substr(request.body.find('\t') + 1);
    Xapian::Enquire enquire(w.db);
    enquire.set_query(w.parser.parse_query(words));
    const Xapian::MSet top = enquire.get_mset(0, kTop, kTop + 1);
    std::string out = std::to_string(top.get_matches_estimated()) + "\t";
    for (auto it = top.begin(); it != top.end(); ++it) {
      out += std::to_string(*it - 1) + " ";
      // Read the stored text, as a search front end would for the snippet.
      volatile std::size_t len = it.get_document().get_data().size();
      (void)len;
    }
    return {out};
  }

  // The query's own document matches all its words: it must be in the answer whenever the
  // answer holds every match.
  bool check(const Request& request, const Response& response) override {
    const std::string expected = request.body.substr(0, request.body.find('\t'));
    const auto tab = response.body.find('\t');
    if (tab == std::string::npos) return false;
    const unsigned long matches = std::stoul(response.body.substr(0, tab));
    if (matches == 0) return false;
    std::istringstream ids(response.body.substr(tab + 1));
    std::string id;
    while (ids >> id) {
      if (id == expected) return true;
    }
    return matches > kTop;
  }

  std::string finish() override {
    Xapian::Database db(dir_ + "/db");
    return "{\"engine\":\"xapian\",\"documents\":" + std::to_string(db.get_doccount()) +
           ",\"terms_avg_per_doc\":" + std::to_string(static_cast<long>(db.get_avlength())) +
           ",\"queries\":" + std::to_string(queries_.size()) + "}";
  }

 private:
  struct Worker {
    Xapian::Database db;
    Xapian::QueryParser parser;
  };
  std::string dir_;
  std::vector<std::string> queries_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<Search>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("search", make, argc, argv); }
