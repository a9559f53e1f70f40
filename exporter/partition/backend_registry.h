// Export-side backends by name: what `ember export --backend NAME` and `ember debug --backend
// NAME` look up. Each delegate's exporter library registers one entry at static-initialisation
// time (EMBER_REGISTER_BACKEND in its partitioner's .cc; the Bazel target is alwayslink), so
// the tools find partitioners by name and never include a delegate's headers, and a new
// backend (the NPU) is one registration line in its own library plus a dependency of the tools.
//
// Options reach a factory as key=value strings scoped to the backend (`--backend-option
// NAME.KEY=VALUE`; the CLI's older flags such as --xnnpack-fp16 map onto the same keys). Each
// factory parses them into its backend's typed options with the helpers below, which reject a
// key the backend does not take (listing those it does) and a value of the wrong kind.
//
// Threading: registration happens before main; lookups are read-only afterwards.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace exporter {

// KEY -> VALUE for one backend.
using BackendOptions = std::map<std::string, std::string>;

using PartitionerFactory = absl::StatusOr<std::shared_ptr<Partitioner>> (*)(const BackendOptions& options);

struct BackendEntry {
  const char* name;     // "xnnpack": --backend's value and the partitioner's backend_id()
  const char* summary;  // one line for --help: "CPU, XNNPACK"
  const char* options;  // the keys it takes, for --help: "threads=N fp16=0|1 ..."
  PartitionerFactory factory;
};

// False (and nothing registered) when the name is taken or the entry is incomplete.
bool register_backend(const BackendEntry& entry);
const BackendEntry* find_backend(const std::string& name);
std::vector<const BackendEntry*> registered_backends();  // sorted by name

// The named backend's partitioner; an error naming the registered backends when there is no
// such backend, or the factory's error for bad options.
absl::StatusOr<std::shared_ptr<Partitioner>> make_partitioner(const std::string& name,
                                                              const BackendOptions& options = BackendOptions());

// For factories: every key of `options` must be one of `known`.
absl::Status check_option_keys(const std::string& backend, const BackendOptions& options,
                               std::initializer_list<const char*> known);
// `*out` keeps its value when `key` is absent. Booleans: 1/0, true/false, yes/no, on/off.
absl::Status read_bool_option(const std::string& backend, const BackendOptions& options, const std::string& key,
                              bool* out);
absl::Status read_int_option(const std::string& backend, const BackendOptions& options, const std::string& key,
                             int64_t lo, int64_t hi, int64_t* out);

}  // namespace exporter
}  // namespace ember

// Registers `factory` as backend `name` (an identifier) when its library is linked.
#define EMBER_REGISTER_BACKEND(name, summary, options, factory)               \
  static const bool ember_backend_registered_##name [[maybe_unused]] = \
      ::ember::exporter::register_backend({#name, summary, options, factory})
