// In-memory OLTP database (the paper's Silo): TPC-C-like transactions on SQLite, its
// database file in tmpfs, one connection per worker, WAL so readers never wait for the
// writer. SQLite runs one writer at a time; writers queue on a mutex instead of SQLite's
// sleeping busy handler, so waiting shows up as latency rather than as sleeps.
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "pimcloud/harness/runner.h"

namespace {

using namespace pimcloud::harness;

constexpr int kDistricts = 10;
constexpr int kBadItem = -1;  // TPC-C: 1% of new orders name an unused item and roll back

class Connection {
 public:
  explicit Connection(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK) {
      throw std::runtime_error("sqlite3_open " + path + ": " + sqlite3_errmsg(db_));
    }
    exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA busy_timeout=60000;"
         "PRAGMA cache_size=-65536; PRAGMA mmap_size=268435456; PRAGMA temp_store=MEMORY;");
  }
  ~Connection() {
    for (auto& [sql, s] : stmts_) sqlite3_finalize(s);
    sqlite3_close(db_);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error("sqlite: " + msg + " in: " + sql.substr(0, 80));
    }
  }

  // Runs a cached statement with integer/double arguments; returns rows of doubles
  // (every column this schema reads is numeric).
  template <typename... Args>
  std::vector<std::vector<double>> query(const char* sql, Args... args) {
    sqlite3_stmt*& s = stmts_[sql];
    if (!s && sqlite3_prepare_v2(db_, sql, -1, &s, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("sqlite prepare: ") + sqlite3_errmsg(db_) + ": " + sql);
    }
    int i = 0;
    (bind(s, ++i, args), ...);
    std::vector<std::vector<double>> rows;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<double> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) row.push_back(sqlite3_column_double(s, c));
      rows.push_back(std::move(row));
    }
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc != SQLITE_DONE) {
      throw std::runtime_error(std::string("sqlite step: ") + sqlite3_errmsg(db_) + ": " + sql);
    }
    return rows;
  }

 private:
  static void bind(sqlite3_stmt* s, int i, long long v) { sqlite3_bind_int64(s, i, v); }
  static void bind(sqlite3_stmt* s, int i, int v) { sqlite3_bind_int64(s, i, v); }
  static void bind(sqlite3_stmt* s, int i, double v) { sqlite3_bind_double(s, i, v); }
  sqlite3* db_ = nullptr;
  std::map<std::string, sqlite3_stmt*> stmts_;
};

const char* kSchema = R"(
CREATE TABLE warehouse(w_id INTEGER PRIMARY KEY, w_tax REAL, w_ytd REAL);
CREATE TABLE district(d_w_id INT, d_id INT, d_tax REAL, d_ytd REAL, d_next_o_id INT,
  PRIMARY KEY(d_w_id, d_id)) WITHOUT ROWID;
CREATE TABLE customer(c_w_id INT, c_d_id INT, c_id INT, c_discount REAL, c_balance REAL,
  c_ytd_payment REAL, c_payment_cnt INT, c_delivery_cnt INT, c_data TEXT,
  PRIMARY KEY(c_w_id, c_d_id, c_id)) WITHOUT ROWID;
CREATE TABLE history(h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_amount REAL);
CREATE TABLE item(i_id INTEGER PRIMARY KEY, i_price REAL, i_name TEXT);
CREATE TABLE stock(s_w_id INT, s_i_id INT, s_quantity INT, s_ytd INT, s_order_cnt INT,
  s_data TEXT, PRIMARY KEY(s_w_id, s_i_id)) WITHOUT ROWID;
CREATE TABLE orders(o_w_id INT, o_d_id INT, o_id INT, o_c_id INT, o_carrier_id INT,
  o_ol_cnt INT, PRIMARY KEY(o_w_id, o_d_id, o_id)) WITHOUT ROWID;
CREATE INDEX orders_customer ON orders(o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE new_order(no_w_id INT, no_d_id INT, no_o_id INT,
  PRIMARY KEY(no_w_id, no_d_id, no_o_id)) WITHOUT ROWID;
CREATE TABLE order_line(ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT, ol_i_id INT,
  ol_quantity INT, ol_amount REAL, ol_delivered INT,
  PRIMARY KEY(ol_w_id, ol_d_id, ol_o_id, ol_number)) WITHOUT ROWID;
)";

class Oltp final : public Service {
 public:
  explicit Oltp(const ServiceArgs& args)
      : warehouses_(static_cast<int>(args.option_int("warehouses", 1))),
        customers_(static_cast<int>(args.option_int("customers", 300))),
        items_(static_cast<int>(args.option_int("items", 10'000))) {
    if (warehouses_ < 1 || customers_ < 10 || items_ < 100) {
      throw std::invalid_argument(
          "oltp needs warehouses >= 1, customers >= 10, items >= 100 (--opt KEY=N)");
    }
    const std::string base = args.option("dir", std::filesystem::exists("/dev/shm") ? "/dev/shm"
                                                                                    : "/tmp");
    path_ = base + "/pimcloud-oltp-" + std::to_string(getpid()) + ".db";
    std::filesystem::remove(path_);
    Connection c(path_);
    c.exec(kSchema);
    c.exec("BEGIN");
    Rng rng(42);
    auto uniform = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    for (int i = 1; i <= items_; ++i) {
      c.query("INSERT INTO item VALUES(?,?, 'item')", i, uniform(100, 10000) / 100.0);
    }
    const int initial_orders = customers_;
    for (int w = 1; w <= warehouses_; ++w) {
      c.query("INSERT INTO warehouse VALUES(?, 0.1, ?)", w, 30000.0 * kDistricts);
      for (int i = 1; i <= items_; ++i) {
        c.query("INSERT INTO stock VALUES(?,?,?,0,0,'stock')", w, i, uniform(10, 100));
      }
      for (int d = 1; d <= kDistricts; ++d) {
        c.query("INSERT INTO district VALUES(?,?,0.1,30000.0,?)", w, d, initial_orders + 1);
        for (int cu = 1; cu <= customers_; ++cu) {
          c.query("INSERT INTO customer VALUES(?,?,?,?,-10.0,10.0,1,0,'customer')", w, d, cu,
                  uniform(0, 5000) / 10000.0);
        }
        for (int o = 1; o <= initial_orders; ++o) {
          const int lines = uniform(5, 15);
          const bool undelivered = o > initial_orders * 7 / 10;  // last 30% undelivered
          c.query("INSERT INTO orders VALUES(?,?,?,?,?,?)", w, d, o, o,
                  undelivered ? 0 : uniform(1, 10), lines);
          if (undelivered) c.query("INSERT INTO new_order VALUES(?,?,?)", w, d, o);
          for (int l = 1; l <= lines; ++l) {
            c.query("INSERT INTO order_line VALUES(?,?,?,?,?,5,?,?)", w, d, o, l,
                    uniform(1, items_), undelivered ? uniform(1, 999999) / 100.0 : 0.0,
                    undelivered ? 0 : 1);
          }
        }
      }
    }
    c.exec("COMMIT");
  }

  ~Oltp() override {
    connections_.clear();
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::remove(path_ + suffix, ec);
    }
  }

  void start(int workers) override {
    for (int i = 0; i < workers; ++i) connections_.push_back(std::make_unique<Connection>(path_));
  }

  // The TPC-C mix: 45% NewOrder, 43% Payment, 4% each OrderStatus, Delivery, StockLevel.
  Request make_request(Rng& rng) override {
    auto uniform = [&](int lo, int hi) {
      return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    const int w = uniform(1, warehouses_), d = uniform(1, kDistricts), c = uniform(1, customers_);
    const int pick = uniform(1, 100);
    std::ostringstream out;
    if (pick <= 45) {
      out << "N " << w << ' ' << d << ' ' << c;
      const int lines = uniform(5, 15);
      const bool rollback = uniform(1, 100) == 1;
      for (int l = 0; l < lines; ++l) {
        const int item = rollback && l == lines - 1 ? kBadItem : uniform(1, items_);
        out << ' ' << item << ':' << uniform(1, 10);
      }
    } else if (pick <= 88) {
      out << "P " << w << ' ' << d << ' ' << c << ' ' << uniform(100, 500000) / 100.0;
    } else if (pick <= 92) {
      out << "O " << w << ' ' << d << ' ' << c;
    } else if (pick <= 96) {
      out << "D " << w << ' ' << uniform(1, 10);
    } else {
      out << "S " << w << ' ' << d << ' ' << uniform(10, 20);
    }
    return {out.str()};
  }

  Response serve(const Request& request, int worker) override {
    Connection& c = *connections_[static_cast<std::size_t>(worker)];
    std::istringstream in(request.body);
    char kind = 0;
    in >> kind;
    Response times;  // the writer's hold and wait times (its SerialSection)
    Response response;
    try {
      switch (kind) {
        case 'N': response = new_order(c, in, times); break;
        case 'P': response = payment(c, in, times); break;
        case 'O': response = order_status(c, in); break;
        case 'D': response = delivery(c, in, times); break;
        case 'S': response = stock_level(c, in); break;
        default: response = {"ERROR unknown transaction"};
      }
    } catch (const std::exception& e) {
      c.exec("ROLLBACK");
      response = {std::string("ERROR ") + e.what()};
    }
    response.serial_ns = times.serial_ns;
    response.serial_wait_ns = times.serial_wait_ns;
    return response;
  }

  bool check(const Request& request, const Response& response) override {
    const bool expect_rollback = request.body[0] == 'N' &&
                                 request.body.find(" " + std::to_string(kBadItem) + ":") !=
                                     std::string::npos;
    return response.body.rfind(expect_rollback ? "ROLLBACK" : "OK", 0) == 0;
  }

  // TPC-C consistency conditions 1-4 over the whole database.
  std::string finish() override {
    Connection c(path_);
    auto one = [&](const char* sql) { return c.query(sql).at(0).at(0); };
    const bool ytd = one("SELECT COUNT(*) FROM warehouse w WHERE abs(w_ytd - (SELECT SUM(d_ytd) "
                         "FROM district WHERE d_w_id = w.w_id)) > 0.01") == 0;
    const bool next_o_id =
        one("SELECT COUNT(*) FROM district d WHERE d_next_o_id - 1 != (SELECT MAX(o_id) FROM "
            "orders WHERE o_w_id = d.d_w_id AND o_d_id = d.d_id) OR (EXISTS (SELECT 1 FROM "
            "new_order WHERE no_w_id = d.d_w_id AND no_d_id = d.d_id) AND d_next_o_id - 1 != "
            "(SELECT MAX(no_o_id) FROM new_order WHERE no_w_id = d.d_w_id AND no_d_id = "
            "d.d_id))") == 0;
    const bool new_orders =
        one("SELECT COUNT(*) FROM (SELECT COUNT(*) n, MAX(no_o_id) - MIN(no_o_id) + 1 span "
            "FROM new_order GROUP BY no_w_id, no_d_id) WHERE n != span") == 0;
    const bool lines =
        one("SELECT (SELECT SUM(o_ol_cnt) FROM orders) = (SELECT COUNT(*) FROM order_line)") ==
        1;
    const double orders = one("SELECT COUNT(*) FROM orders");
    auto flag = [](bool b) { return b ? "true" : "false"; };
    return std::string("{\"engine\":\"sqlite\",\"orders\":") +
           std::to_string(static_cast<long long>(orders)) + ",\"ytd_consistent\":" + flag(ytd) +
           ",\"next_order_id_consistent\":" + flag(next_o_id) +
           ",\"new_order_consistent\":" + flag(new_orders) +
           ",\"order_lines_consistent\":" + flag(lines) +
           ",\"consistent\":" + flag(ytd && next_o_id && new_orders && lines) + "}";
  }

 private:
  Response new_order(Connection& c, std::istream& in, Response& times) {
    int w, d, cu;
    in >> w >> d >> cu;
    std::vector<std::pair<int, int>> lines;
    std::string item;
    while (in >> item) {
      const auto colon = item.find(':');
      lines.emplace_back(std::stoi(item.substr(0, colon)), std::stoi(item.substr(colon + 1)));
    }
    SerialSection writer(writer_, times);
    c.exec("BEGIN IMMEDIATE");
    const auto district = c.query(
        "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ?", w, d);
    const int o_id = static_cast<int>(district.at(0).at(0));
    c.query("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = ? AND d_id = ?",
            w, d);
    const double discount = c.query("SELECT c_discount FROM customer WHERE c_w_id = ? AND "
                                    "c_d_id = ? AND c_id = ?", w, d, cu).at(0).at(0);
    c.query("INSERT INTO orders VALUES(?,?,?,?,0,?)", w, d, o_id, cu,
            static_cast<int>(lines.size()));
    c.query("INSERT INTO new_order VALUES(?,?,?)", w, d, o_id);
    double total = 0;
    for (std::size_t l = 0; l < lines.size(); ++l) {
      const auto [i_id, qty] = lines[l];
      const auto price = c.query("SELECT i_price FROM item WHERE i_id = ?", i_id);
      if (price.empty()) {
        c.exec("ROLLBACK");
        return {"ROLLBACK item " + std::to_string(i_id) + " not found"};
      }
      const auto stock = c.query("SELECT s_quantity FROM stock WHERE s_w_id = ? AND s_i_id = ?",
                                 w, i_id);
      int quantity = static_cast<int>(stock.at(0).at(0)) - qty;
      if (quantity < 10) quantity += 91;
      c.query("UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1 "
              "WHERE s_w_id = ? AND s_i_id = ?", quantity, qty, w, i_id);
      const double amount = qty * price[0][0];
      total += amount;
      c.query("INSERT INTO order_line VALUES(?,?,?,?,?,?,?,0)", w, d, o_id,
              static_cast<int>(l + 1), i_id, qty, amount);
    }
    c.exec("COMMIT");
    char out[64];
    std::snprintf(out, sizeof out, "OK %d %.2f", o_id,
                  total * (1 - discount) * (1 + district[0][1]));
    return {out};
  }

  Response payment(Connection& c, std::istream& in, Response& times) {
    int w, d, cu;
    double amount;
    in >> w >> d >> cu >> amount;
    SerialSection writer(writer_, times);
    c.exec("BEGIN IMMEDIATE");
    c.query("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?", amount, w);
    c.query("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?", amount, w, d);
    c.query("UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, "
            "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
            amount, amount, w, d, cu);
    c.query("INSERT INTO history VALUES(?,?,?,?)", cu, d, w, amount);
    c.exec("COMMIT");
    return {"OK"};
  }

  Response order_status(Connection& c, std::istream& in) {
    int w, d, cu;
    in >> w >> d >> cu;
    c.exec("BEGIN");
    const auto balance = c.query("SELECT c_balance FROM customer WHERE c_w_id = ? AND c_d_id = ? "
                                 "AND c_id = ?", w, d, cu);
    const auto last = c.query("SELECT MAX(o_id) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND "
                              "o_c_id = ?", w, d, cu);
    std::size_t lines = 0;
    if (!last.empty()) {
      lines = c.query("SELECT ol_i_id, ol_quantity, ol_amount FROM order_line WHERE ol_w_id = ? "
                      "AND ol_d_id = ? AND ol_o_id = ?", w, d,
                      static_cast<int>(last[0][0])).size();
    }
    c.exec("COMMIT");
    return {"OK " + std::to_string(lines) + " lines, balance " +
            std::to_string(balance.at(0).at(0))};
  }

  Response delivery(Connection& c, std::istream& in, Response& times) {
    int w, carrier;
    in >> w >> carrier;
    SerialSection writer(writer_, times);
    c.exec("BEGIN IMMEDIATE");
    int delivered = 0;
    for (int d = 1; d <= kDistricts; ++d) {
      const auto oldest = c.query("SELECT MIN(no_o_id) FROM new_order WHERE no_w_id = ? AND "
                                  "no_d_id = ?", w, d);
      if (oldest.empty() || oldest[0][0] == 0) continue;  // MIN over no rows is NULL -> 0
      const int o = static_cast<int>(oldest[0][0]);
      c.query("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?", w, d, o);
      const int cu = static_cast<int>(
          c.query("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?", w, d,
                  o).at(0).at(0));
      c.query("UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
              carrier, w, d, o);
      c.query("UPDATE order_line SET ol_delivered = 1 WHERE ol_w_id = ? AND ol_d_id = ? AND "
              "ol_o_id = ?", w, d, o);
      const double sum = c.query("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = ? AND "
                                 "ol_d_id = ? AND ol_o_id = ?", w, d, o).at(0).at(0);
      c.query("UPDATE customer SET c_balance = c_balance + ?, c_delivery_cnt = c_delivery_cnt + "
              "1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?", sum, w, d, cu);
      ++delivered;
    }
    c.exec("COMMIT");
    return {"OK " + std::to_string(delivered) + " delivered"};
  }

  Response stock_level(Connection& c, std::istream& in) {
    int w, d, threshold;
    in >> w >> d >> threshold;
    c.exec("BEGIN");
    const int next = static_cast<int>(
        c.query("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?", w, d)
            .at(0).at(0));
    const auto low = c.query(
        "SELECT COUNT(DISTINCT s_i_id) FROM order_line JOIN stock ON s_w_id = ol_w_id AND "
        "s_i_id = ol_i_id WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id >= ? AND ol_o_id < ? "
        "AND s_quantity < ?", w, d, next - 20, next, threshold);
    c.exec("COMMIT");
    return {"OK " + std::to_string(static_cast<long long>(low.at(0).at(0))) + " low"};
  }

  int warehouses_, customers_, items_;
  std::string path_;
  std::mutex writer_;
  std::vector<std::unique_ptr<Connection>> connections_;
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<Oltp>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("oltp", make, argc, argv); }
