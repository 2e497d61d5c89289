// Key-value store (the paper's Masstree): point gets and puts on LMDB, an in-memory B+tree
// mapped from a file in tmpfs. Zipfian key popularity, 90% gets / 10% puts by default.
#include <lmdb.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pimcloud/harness/runner.h"

namespace {

using namespace pimcloud::harness;

void lmdb_check(int rc, const char* what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error(std::string(what) + ": " + mdb_strerror(rc));
}

constexpr std::size_t kValueBytes = 100;

std::string key_of(std::uint64_t k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "user%012llu", static_cast<unsigned long long>(k));
  return buf;
}

// A value names its key and version, so a get can be checked without a second store.
std::string value_of(const std::string& key, std::uint64_t version) {
  std::string v = "k=" + key + ";v=" + std::to_string(version) + ";";
  while (v.size() < kValueBytes) v += static_cast<char>('a' + (v.size() * 7 + version) % 26);
  return v;
}

class KvStore final : public Service {
 public:
  explicit KvStore(const ServiceArgs& args)
      : keys_(static_cast<std::uint64_t>(args.option_int("keys", 200'000))),
        put_percent_(static_cast<int>(args.option_int("put_percent", 10))),
        theta_(std::stod(args.option("zipf", "0.99"))) {
    if (keys_ < 10) throw std::invalid_argument("--opt keys must be >= 10");
    if (put_percent_ < 0 || put_percent_ > 100) {
      throw std::invalid_argument("--opt put_percent must be 0..100");
    }
    const std::string base = args.option("dir", std::filesystem::exists("/dev/shm") ? "/dev/shm"
                                                                                    : "/tmp");
    dir_ = base + "/pimcloud-kvstore-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
    lmdb_check(mdb_env_create(&env_), "mdb_env_create");
    const std::size_t map_bytes = std::max<std::size_t>(keys_ * 512, 64u << 20);
    lmdb_check(mdb_env_set_mapsize(env_, map_bytes), "mdb_env_set_mapsize");
    lmdb_check(mdb_env_set_maxreaders(env_, 1024), "mdb_env_set_maxreaders");
    // The store lives in memory (tmpfs); durability is not what is measured.
    lmdb_check(mdb_env_open(env_, dir_.c_str(),
                            MDB_NOSYNC | MDB_NOMETASYNC | MDB_WRITEMAP | MDB_NOTLS, 0644),
               ("mdb_env_open " + dir_).c_str());
    MDB_txn* txn = nullptr;
    lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin");
    lmdb_check(mdb_dbi_open(txn, nullptr, 0, &dbi_), "mdb_dbi_open");
    for (std::uint64_t k = 0; k < keys_; ++k) {  // keys in order: an append-only load
      const std::string key = key_of(k), value = value_of(key, 0);
      MDB_val mk{key.size(), const_cast<char*>(key.data())};
      MDB_val mv{value.size(), const_cast<char*>(value.data())};
      lmdb_check(mdb_put(txn, dbi_, &mk, &mv, MDB_APPEND), "mdb_put (load)");
    }
    lmdb_check(mdb_txn_commit(txn), "mdb_txn_commit (load)");
    // Zipf CDF over key ranks; ranks are scattered over the key space by a multiplier.
    cdf_.resize(keys_);
    double sum = 0;
    for (std::uint64_t i = 0; i < keys_; ++i) {
      sum += 1.0 / std::pow(static_cast<double>(i + 1), theta_);
      cdf_[i] = sum;
    }
    for (auto& c : cdf_) c /= sum;
  }

  ~KvStore() override {
    for (auto* t : readers_) {
      if (t) mdb_txn_abort(t);
    }
    mdb_env_close(env_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void start(int workers) override { readers_.assign(static_cast<std::size_t>(workers), nullptr); }

  Request make_request(Rng& rng) override {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    const auto rank = static_cast<std::uint64_t>(
        std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    const std::uint64_t k = (std::min(rank, keys_ - 1) * 2654435761ULL) % keys_;
    if (static_cast<int>(rng() % 100) < put_percent_) {
      return {"P " + key_of(k) + " " + std::to_string(rng() % 1'000'000 + 1)};
    }
    return {"G " + key_of(k)};
  }

  Response serve(const Request& request, int worker) override {
    const std::string key = request.body.substr(2, request.body.find(' ', 2) - 2);
    MDB_val mk{key.size(), const_cast<char*>(key.data())};
    if (request.body[0] == 'G') {
      MDB_txn*& txn = readers_[static_cast<std::size_t>(worker)];
      // A read transaction per worker, renewed per request (cheap with MDB_NOTLS).
      if (!txn) {
        lmdb_check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin (read)");
      } else {
        lmdb_check(mdb_txn_renew(txn), "mdb_txn_renew");
      }
      MDB_val mv{};
      const int rc = mdb_get(txn, dbi_, &mk, &mv);
      std::string value = rc == MDB_SUCCESS ? std::string(static_cast<char*>(mv.mv_data), mv.mv_size)
                                            : std::string("MISSING");
      mdb_txn_reset(txn);
      return {std::move(value)};
    }
    const std::uint64_t version = std::stoull(request.body.substr(2 + key.size() + 1));
    const std::string value = value_of(key, version);
    MDB_val mv{value.size(), const_cast<char*>(value.data())};
    MDB_txn* txn = nullptr;
    lmdb_check(mdb_txn_begin(env_, nullptr, 0, &txn), "mdb_txn_begin (write)");
    lmdb_check(mdb_put(txn, dbi_, &mk, &mv, 0), "mdb_put");
    lmdb_check(mdb_txn_commit(txn), "mdb_txn_commit");
    return {"OK"};
  }

  bool check(const Request& request, const Response& response) override {
    const std::string key = request.body.substr(2, request.body.find(' ', 2) - 2);
    if (request.body[0] == 'P') return response.body == "OK";
    return response.body.size() == kValueBytes && response.body.rfind("k=" + key + ";", 0) == 0;
  }

  // Every key is still there exactly once, with a well-formed value of its own.
  std::string finish() override {
    MDB_txn* txn = nullptr;
    lmdb_check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), "mdb_txn_begin (scan)");
    MDB_cursor* cursor = nullptr;
    lmdb_check(mdb_cursor_open(txn, dbi_, &cursor), "mdb_cursor_open");
    MDB_val mk{}, mv{};
    std::uint64_t count = 0, bad = 0;
    while (mdb_cursor_get(cursor, &mk, &mv, count ? MDB_NEXT : MDB_FIRST) == MDB_SUCCESS) {
      const std::string key(static_cast<char*>(mk.mv_data), mk.mv_size);
      const std::string value(static_cast<char*>(mv.mv_data), mv.mv_size);
      if (key != key_of(count) || value.size() != kValueBytes ||
          value.rfind("k=" + key + ";", 0) != 0) {
        ++bad;
      }
      ++count;
    }
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    return "{\"engine\":\"lmdb\",\"keys\":" + std::to_string(keys_) +
           ",\"keys_found\":" + std::to_string(count) + ",\"bad_values\":" + std::to_string(bad) +
           ",\"consistent\":" + (count == keys_ && bad == 0 ? "true" : "false") + "}";
  }

 private:
  std::uint64_t keys_;
  int put_percent_;
  double theta_;
  std::string dir_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  std::vector<MDB_txn*> readers_;
  std::vector<double> cdf_;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<KvStore>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("kvstore", make, argc, argv); }
