#include "policy/Policy.h"

#include <algorithm>

namespace pimcloud {
namespace {

struct Entry {
  PolicyInfo info;
  PolicyFactory factory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> entries;  // built before first use
  return entries;
}

}  // namespace

bool PolicyRegistry::add(const std::string& name, const std::string& summary,
                         PolicyFactory factory, std::vector<PolicyOption> options,
                         OptionsParser parse) {
  return registry()
      .emplace(name, Entry{PolicyInfo{summary, std::move(options), std::move(parse)},
                           std::move(factory)})
      .second;
}

std::vector<std::string> PolicyRegistry::parseOptions(const std::string& name,
                                                      const nlohmann::json& options,
                                                      PolicyParams& params) {
  auto it = registry().find(name);
  if (it == registry().end()) return {"policy \"" + name + "\" is not registered"};
  if (!options.is_object()) {
    return {"options: expected an object of " + name + "'s options, like {\"key\": value}"};
  }
  const PolicyInfo& info = it->second.info;
  if (!info.parse) {
    if (options.empty()) return {};
    return {"options: " + name + " takes no options; remove " + options.dump()};
  }
  std::vector<std::string> errors;
  for (const auto& [key, value] : options.items()) {
    const bool known = std::any_of(info.options.begin(), info.options.end(),
                                   [&key](const PolicyOption& o) { return o.key == key; });
    if (!known) {
      std::string list;
      for (const PolicyOption& o : info.options) list += (list.empty() ? "" : ", ") + o.key;
      errors.push_back("options." + key + ": " + name + " has no such option; it reads " + list);
    }
  }
  for (std::string& e : info.parse(options, params)) errors.push_back(std::move(e));
  return errors;
}

nlohmann::json PolicyRegistry::describe() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [name, entry] : registry()) {
    nlohmann::json options = nlohmann::json::array();
    for (const PolicyOption& o : entry.info.options) {
      options.push_back({{"key", o.key}, {"type", o.type},
                         {"default", nlohmann::json::parse(o.fallback)}, {"help", o.help}});
    }
    list.push_back({{"name", name}, {"summary", entry.info.summary}, {"options", options}});
  }
  return {{"policies", list}};
}

std::unique_ptr<Policy> PolicyRegistry::create(const std::string& name,
                                               const PolicyContext& context) {
  auto it = registry().find(name);
  if (it == registry().end()) return nullptr;
  return it->second.factory(context);
}

std::map<std::string, std::string> PolicyRegistry::names() {
  std::map<std::string, std::string> out;
  for (const auto& [name, entry] : registry()) out[name] = entry.info.summary;
  return out;
}

void OptionReader::number(const char* key, double& out, double min, double max) {
  if (!options_.contains(key)) return;
  const nlohmann::json& v = options_[key];
  if (!v.is_number() || v.get<double>() < min || v.get<double>() > max) {
    errors.push_back(std::string("options.") + key + " is " + v.dump() + "; give a number from " +
                     nlohmann::json(min).dump() + " to " + nlohmann::json(max).dump());
    return;
  }
  out = v.get<double>();
}

void OptionReader::whole(const char* key, int& out, int min, int max) {
  if (!options_.contains(key)) return;
  const nlohmann::json& v = options_[key];
  if (!v.is_number_integer() || v.get<long long>() < min || v.get<long long>() > max) {
    errors.push_back(std::string("options.") + key + " is " + v.dump() +
                     "; give a whole number from " + std::to_string(min) + " to " +
                     std::to_string(max));
    return;
  }
  out = v.get<int>();
}

void OptionReader::boolean(const char* key, bool& out) {
  if (!options_.contains(key)) return;
  const nlohmann::json& v = options_[key];
  if (!v.is_boolean()) {
    errors.push_back(std::string("options.") + key + " is " + v.dump() + "; use true or false");
    return;
  }
  out = v.get<bool>();
}

void OptionReader::choice(const char* key, std::string& out,
                          const std::vector<std::string>& allowed) {
  if (!options_.contains(key)) return;
  const nlohmann::json& v = options_[key];
  if (!v.is_string() || std::find(allowed.begin(), allowed.end(), v.get<std::string>()) ==
                            allowed.end()) {
    std::string list;
    for (const std::string& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
    errors.push_back(std::string("options.") + key + " is " + v.dump() + "; use " + list);
    return;
  }
  out = v.get<std::string>();
}

void OptionReader::strings(const char* key, std::vector<std::string>& out) {
  if (!options_.contains(key)) return;
  const nlohmann::json& v = options_[key];
  const bool ok = v.is_array() && std::all_of(v.begin(), v.end(),
                                              [](const nlohmann::json& e) { return e.is_string(); });
  if (!ok) {
    errors.push_back(std::string("options.") + key + " is " + v.dump() +
                     "; give a list of names, like [\"xapian\", \"masstree\"]");
    return;
  }
  out = v.get<std::vector<std::string>>();
}

const char* toString(PlacementRequest::Kind kind) {
  switch (kind) {
    case PlacementRequest::Kind::MigrateThreadTo: return "migrate-thread-to";
    case PlacementRequest::Kind::MigrateThreadBack: return "migrate-thread-back";
    case PlacementRequest::Kind::Replicate: return "replicate";
    case PlacementRequest::Kind::DropReplicas: return "drop-replicas";
    case PlacementRequest::Kind::MoveBePages: return "move-be-pages";
  }
  return "?";
}

}  // namespace pimcloud
