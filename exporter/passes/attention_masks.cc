// make_attention_masks_additive: boolean attention masks become additive float masks.
#include <cmath>
#include <map>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

bool reads_bool_mask(const Graph& g, const Node& n) {
  return !n.erased && n.kernel_name() == "aten::scaled_dot_product_attention.default" && n.args.size() > 3 &&
         n.args[3].kind == Arg::Kind::Tensor && n.args[3].ref >= 0 && n.args[0].kind == Arg::Kind::Tensor &&
         n.args[0].ref >= 0 && g.values[n.args[0].ref].dtype == ScalarType::Float32 &&
         g.values[n.args[3].ref].dtype == ScalarType::Bool;
}

Node where_node(int mask, int out, const std::string& source, const std::string& name) {
  Node w;
  w.op = "aten::where";
  w.overload = "Scalar";
  w.schema = find_op_schema(w.op, w.overload);
  w.arg_names = {"condition", "self", "other"};
  // True = may attend (adds 0), False = masked out (adds -inf), as PyTorch defines it.
  w.args = {Arg::tensor(mask), Arg::real(0.0), Arg::real(-INFINITY)};
  w.outputs = {Arg::tensor(out)};
  w.source = source;
  w.name = name;  // "<mask>_additive": names the conversion in traces
  return w;
}

}  // namespace

int make_attention_masks_additive(Graph& g) {
  std::map<int, int> additive;  // bool mask value -> its float version (one per mask)
  std::map<int, std::string> source;
  for (Node& n : g.nodes) {
    if (!reads_bool_mask(g, n)) continue;
    const int mask = n.args[3].ref;
    if (!additive.count(mask)) {
      Value v;  // fields copied first: add_value may move g.values
      v.name = g.values[mask].name + "_additive";
      v.dtype = ScalarType::Float32;
      v.sizes = g.values[mask].sizes;
      v.dynamic_dims = g.values[mask].dynamic_dims;
      additive[mask] = g.add_value(v);
      source[mask] = n.source;
    }
    n.args[3] = Arg::tensor(additive[mask]);
  }
  if (additive.empty()) return 0;
  // Each conversion goes right after the mask's producer (first, for inputs), not before the
  // attention: a portable node between two delegated ops would split their partition.
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size() + additive.size());
  for (const auto& [mask, out] : additive) {
    if (g.values[mask].producer < 0) nodes.push_back(where_node(mask, out, source[mask], g.values[out].name));
  }
  for (Node& n : g.nodes) {
    std::vector<int> produced = n.erased ? std::vector<int>{} : n.output_values();
    nodes.push_back(std::move(n));
    for (int r : produced) {
      auto it = additive.find(r);
      if (it != additive.end() && g.values[r].producer >= 0) nodes.push_back(where_node(r, it->second, source[r], g.values[it->second].name));
    }
  }
  g.nodes = std::move(nodes);
  g.compact();
  return static_cast<int>(additive.size());
}

}  // namespace exporter
}  // namespace ember
