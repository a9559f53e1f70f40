#include "exporter/check/kernel_check.h"

#include <algorithm>
#include <map>
#include <vector>

#include "exporter/ops/op_schemas.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace exporter {
namespace {

// Configurations an op's portable kernel rejects at run time although the op itself has a
// kernel: reported at export, so a program that exports also runs. "" when supported.
std::string unsupported_configuration(const Node& n) {
  if (n.kernel_name() == "aten::lstm.input" && n.args.size() == 9 && n.args[2].kind == Arg::Kind::Tensors &&
      n.args[3].kind == Arg::Kind::Bool && n.args[4].kind == Arg::Kind::Int && n.args[7].kind == Arg::Kind::Bool) {
    const int64_t per = n.args[3].b ? 4 : 2, dirs = n.args[7].b ? 2 : 1, layers = n.args[4].i;
    const int64_t got = static_cast<int64_t>(n.args[2].refs.size());
    // With projections (proj_size > 0) each layer and direction also has w_hr.
    if (got != layers * dirs * per && got != layers * dirs * (per + 1)) {
      return "LSTM parameter list has " + std::to_string(got) + " tensors, expected " +
             std::to_string(layers * dirs * per) + " (" + std::to_string(layers) + " layer(s) x " +
             std::to_string(dirs) + " direction(s) x " + std::to_string(per) + ") or " +
             std::to_string(layers * dirs * (per + 1)) + " with projections";
    }
  }
  return "";
}

}  // namespace

absl::Status check_kernels(const Graph& g) {
  std::map<std::string, std::vector<std::string>> missing;  // op -> locations
  std::map<std::string, bool> no_schema;
  std::map<std::string, std::vector<std::string>> unsupported;  // "op: why" -> locations
  for (const Node& n : g.nodes) {
    if (n.erased || n.op.rfind("delegate::", 0) == 0) continue;
    std::string name = n.kernel_name();
    // A custom operator's kernel is the application's (op_schemas.h), not this build's.
    if (n.schema != nullptr && is_custom_op(name)) continue;
    bool has_kernel = find_kernel(name.c_str()) != nullptr;
    std::string why = n.schema != nullptr && has_kernel ? unsupported_configuration(n) : "";
    if (n.schema != nullptr && has_kernel && why.empty()) continue;
    std::string where = n.source.empty() ? "<no source location>" : n.source;
    auto& locs = why.empty() ? missing[name] : unsupported[name + ": " + why];
    if (std::find(locs.begin(), locs.end(), where) == locs.end()) locs.push_back(where);
    if (!why.empty()) continue;
    if (n.schema == nullptr) no_schema[name] = true;
  }
  if (missing.empty() && unsupported.empty()) return absl::OkStatus();
  auto list = [](std::string& msg, const std::string& what, const std::vector<std::string>& locs) {
    msg += "\n  " + what + ", used by " + std::to_string(locs.size()) + " node(s):";
    size_t shown = 0;
    for (const std::string& l : locs) {
      if (++shown > 3) { msg += "\n      ..."; break; }
      msg += "\n      at " + l;
    }
  };
  std::string msg;
  if (!missing.empty()) {
    msg = std::to_string(missing.size()) + " operator(s) have no kernel in this build:";
    for (const auto& [op, locs] : missing) {
      list(msg, op + (no_schema.count(op) ? " (no ATen schema known to the exporter)" : ""), locs);
    }
    const bool foreign = std::any_of(no_schema.begin(), no_schema.end(), [](const auto& e) {
      return e.first.rfind("aten::", 0) != 0 && e.first.rfind("prims::", 0) != 0 && e.first.rfind("_operator::", 0) != 0;
    });
    if (foreign) {
      msg += "\n  An operator of your own or of a library (torch.library) runs as a custom operator: pass its "
             "signature to the exporter (--op-schema 'ns::op.overload(Tensor x, float scale) -> Tensor', or "
             "--op-schemas FILE with one per line) and register its kernel in your application under the same "
             "name (ember::register_kernel; examples/custom_op).";
    }
  }
  if (!unsupported.empty()) {
    if (!msg.empty()) msg += "\n";
    msg += std::to_string(unsupported.size()) + " operator configuration(s) are not supported:";
    for (const auto& [what, locs] : unsupported) list(msg, what, locs);
  }
  return absl::UnimplementedError(msg);
}

}  // namespace exporter
}  // namespace ember
