#include "exporter/check/kernel_check.h"

#include <algorithm>
#include <map>
#include <vector>

#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace exporter {

absl::Status check_kernels(const Graph& g) {
  std::map<std::string, std::vector<std::string>> missing;  // op -> locations
  std::map<std::string, bool> no_schema;
  for (const Node& n : g.nodes) {
    if (n.erased || n.op.rfind("delegate::", 0) == 0) continue;
    std::string name = n.kernel_name();
    bool has_kernel = find_kernel(name.c_str()) != nullptr;
    if (n.schema != nullptr && has_kernel) continue;
    std::string where = n.source.empty() ? "<no source location>" : n.source;
    auto& locs = missing[name];
    if (std::find(locs.begin(), locs.end(), where) == locs.end()) locs.push_back(where);
    if (n.schema == nullptr) no_schema[name] = true;
  }
  if (missing.empty()) return absl::OkStatus();
  std::string msg = std::to_string(missing.size()) + " operator(s) have no kernel in this build:";
  for (const auto& [op, locs] : missing) {
    msg += "\n  " + op + (no_schema.count(op) ? " (no ATen schema known to the exporter)" : "") + ", used by " +
           std::to_string(locs.size()) + " node(s):";
    size_t shown = 0;
    for (const std::string& l : locs) {
      if (++shown > 3) { msg += "\n      ..."; break; }
      msg += "\n      at " + l;
    }
  }
  return absl::UnimplementedError(msg);
}

}  // namespace exporter
}  // namespace ember
