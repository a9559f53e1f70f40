#include "exporter/partition/backend_registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace exporter {

namespace {

// A function-local static: registrations run from other libraries' static initialisers.
std::vector<BackendEntry>& entries() {
  static std::vector<BackendEntry> e;
  return e;
}

std::string names() {
  std::string s;
  for (const BackendEntry* e : registered_backends()) s += (s.empty() ? "" : ", ") + std::string(e->name);
  return s.empty() ? "none linked into this build" : s;
}

}  // namespace

bool register_backend(const BackendEntry& entry) {
  if (entry.name == nullptr || entry.factory == nullptr || find_backend(entry.name) != nullptr) return false;
  entries().push_back(entry);
  return true;
}

const BackendEntry* find_backend(const std::string& name) {
  for (const BackendEntry& e : entries()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

std::vector<const BackendEntry*> registered_backends() {
  std::vector<const BackendEntry*> out;
  for (const BackendEntry& e : entries()) out.push_back(&e);
  std::sort(out.begin(), out.end(), [](const BackendEntry* a, const BackendEntry* b) {
    return std::strcmp(a->name, b->name) < 0;
  });
  return out;
}

absl::StatusOr<std::shared_ptr<Partitioner>> make_partitioner(const std::string& name, const BackendOptions& options) {
  const BackendEntry* e = find_backend(name);
  if (e == nullptr) {
    return absl::InvalidArgumentError("unknown backend '" + name + "' (backends in this build: " + names() +
                                      "; portable needs no partitioner)");
  }
  return e->factory(options);
}

absl::Status check_option_keys(const std::string& backend, const BackendOptions& options,
                               std::initializer_list<const char*> known) {
  for (const auto& [key, value] : options) {
    bool ok = false;
    for (const char* k : known) ok |= key == k;
    if (ok) continue;
    std::string list;
    for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    return absl::InvalidArgumentError("backend " + backend + " has no option '" + key + "' (it takes: " +
                                      (list.empty() ? "none" : list) + ")");
  }
  return absl::OkStatus();
}

absl::Status read_bool_option(const std::string& backend, const BackendOptions& options, const std::string& key,
                              bool* out) {
  auto it = options.find(key);
  if (it == options.end()) return absl::OkStatus();
  const std::string& v = it->second;
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    *out = true;
  } else if (v == "0" || v == "false" || v == "no" || v == "off") {
    *out = false;
  } else {
    return absl::InvalidArgumentError("backend " + backend + " option " + key + "=" + v + ": expected 1 or 0");
  }
  return absl::OkStatus();
}

absl::Status read_int_option(const std::string& backend, const BackendOptions& options, const std::string& key,
                             int64_t lo, int64_t hi, int64_t* out) {
  auto it = options.find(key);
  if (it == options.end()) return absl::OkStatus();
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (it->second.empty() || end == nullptr || *end != '\0' || errno != 0 || v < lo || v > hi) {
    return absl::InvalidArgumentError("backend " + backend + " option " + key + "=" + it->second +
                                      ": expected an integer from " + std::to_string(lo) + " to " +
                                      std::to_string(hi));
  }
  *out = v;
  return absl::OkStatus();
}

}  // namespace exporter
}  // namespace ember
