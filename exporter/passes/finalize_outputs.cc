#include <set>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {

int finalize_outputs(Graph& g) {
  int changes = 0;
  for (const WriteBack& w : g.write_backs) {
    if (w.from == w.to) continue;
    Node n;
    n.op = "aten::copy";
    n.overload = "default";
    n.schema = find_op_schema(n.op, n.overload);
    n.args = {Arg::tensor(w.to), Arg::tensor(w.from), Arg::boolean(false)};
    n.arg_names = {"self", "src", "non_blocking"};
    n.outputs = {Arg::tensor(w.to)};
    n.source = "state write-back of " + g.values[w.to].name;
    g.nodes.push_back(std::move(n));
    ++changes;
  }
  g.write_backs.clear();
  std::set<int> seen;
  for (GraphOutput& o : g.outputs) {
    if (o.value < 0 || g.values[o.value].type != ValueType::Tensor) continue;
    const Value& v = g.values[o.value];
    bool planned_activation = v.role == ValueRole::Activation && v.producer >= 0;
    if (planned_activation && seen.insert(o.value).second) continue;
    Value copy;
    copy.name = v.name + "_output_copy";
    copy.dtype = v.dtype;
    copy.sizes = v.sizes;
    copy.dynamic_dims = v.dynamic_dims;
    int id = g.add_value(copy);
    Node n;
    n.op = "aten::clone";
    n.overload = "default";
    n.schema = find_op_schema(n.op, n.overload);
    n.args = {Arg::tensor(o.value), Arg::none()};
    n.arg_names = {"self", "memory_format"};
    n.outputs = {Arg::tensor(id)};
    n.source = "copy of graph output " + g.values[o.value].name;
    g.nodes.push_back(std::move(n));
    o.value = id;
    seen.insert(id);
    ++changes;
  }
  g.compact();
  return changes;
}

}  // namespace exporter
}  // namespace ember
