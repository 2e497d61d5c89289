#include "policy/Policy.h"

namespace pimcloud {
namespace {

struct Entry {
  std::string summary;
  PolicyFactory factory;
};

std::map<std::string, Entry>& registry() {
  static std::map<std::string, Entry> entries;  // built before first use
  return entries;
}

}  // namespace

bool PolicyRegistry::add(const std::string& name, const std::string& summary,
                         PolicyFactory factory) {
  return registry().emplace(name, Entry{summary, std::move(factory)}).second;
}

std::unique_ptr<Policy> PolicyRegistry::create(const std::string& name,
                                               const PolicyContext& context) {
  auto it = registry().find(name);
  if (it == registry().end()) return nullptr;
  return it->second.factory(context);
}

std::map<std::string, std::string> PolicyRegistry::names() {
  std::map<std::string, std::string> out;
  for (const auto& [name, entry] : registry()) out[name] = entry.summary;
  return out;
}

const char* toString(PlacementRequest::Kind kind) {
  switch (kind) {
    case PlacementRequest::Kind::MigrateThreadTo: return "migrate-thread-to";
    case PlacementRequest::Kind::MigrateThreadBack: return "migrate-thread-back";
    case PlacementRequest::Kind::Replicate: return "replicate";
    case PlacementRequest::Kind::DropReplicas: return "drop-replicas";
  }
  return "?";
}

}  // namespace pimcloud
