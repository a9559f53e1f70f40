// ATen function schemas (native_functions.yaml style signature strings), parsed once.
// Used to order node arguments and fill defaults: a .pt2 omits defaulted arguments and
// passes keyword arguments by name, while kernels receive every argument in schema order.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

struct SchemaArg {
  std::string name;
  std::string type;      // as written: "Tensor?", "int[2]", "SymInt[]", "Scalar", ...
  bool optional = false; // type ends with '?'
  bool is_list = false;  // type has [] / [N]
  int list_size = 0;     // N of "int[N]" (0 when unspecified)
  std::string base;      // type without '?', '[..]' and alias annotations: "Tensor", "int"
  bool kwarg_only = false;
  bool has_default = false;
  Arg default_value;
};

struct SchemaReturn {
  std::string type;  // "Tensor", "Tensor[]", "SymInt", "bool", ...
};

struct OpSchema {
  std::string name;      // "aten::add" (namespace added when missing)
  std::string overload;  // "Tensor" / "default"
  std::vector<SchemaArg> args;
  std::vector<SchemaReturn> returns;
  std::string text;

  std::string full_name() const { return name + "." + overload; }
  int arg_index(const std::string& arg_name) const;
};

// Parses one signature, e.g.
//   "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
// A name without namespace gets "aten::"; without overload gets "default".
absl::StatusOr<OpSchema> parse_op_schema(const std::string& signature);

// The built-in table (parsed on first use). Null when the op is unknown.
const OpSchema* find_op_schema(const std::string& name, const std::string& overload);
const std::vector<OpSchema>& all_op_schemas();

// The raw signature strings (for tests).
const std::vector<const char*>& op_schema_strings();

}  // namespace exporter
}  // namespace ember
