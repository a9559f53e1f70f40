// split_to_slices: split.Tensor / split_with_sizes become one slice per piece.
#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {

int split_to_slices(Graph& g) {
  std::vector<Node> nodes;
  nodes.reserve(g.nodes.size());
  int changes = 0;
  for (Node& n : g.nodes) {
    const std::string k = n.kernel_name();
    const bool split = k == "aten::split.Tensor" || k == "aten::split_with_sizes.default";
    if (n.erased || !split || n.args.size() < 2 || n.args[0].kind != Arg::Kind::Tensor || n.args[0].ref < 0 ||
        n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensors) {
      nodes.push_back(std::move(n));
      continue;
    }
    const Value& x = g.values[n.args[0].ref];
    int64_t dim = 0;
    if (n.args.size() > 2) {
      if (n.args[2].kind != Arg::Kind::Int) { nodes.push_back(std::move(n)); continue; }
      dim = n.args[2].i;
    }
    const int64_t rank = static_cast<int64_t>(x.sizes.size());
    if (dim < 0) dim += rank;
    const std::vector<int>& pieces = n.outputs[0].refs;
    bool ok = dim >= 0 && dim < rank && !x.is_dynamic();
    int64_t total = 0;
    for (int p : pieces) {
      ok = ok && p >= 0 && !g.values[p].is_dynamic() && g.values[p].sizes.size() == x.sizes.size();
      if (ok) total += g.values[p].sizes[static_cast<size_t>(dim)];
    }
    if (!ok || total != x.sizes[static_cast<size_t>(dim)]) {  // the pieces must tile the input
      nodes.push_back(std::move(n));
      continue;
    }
    // Each piece's size along `dim` is already in its value: slice consecutive ranges.
    int64_t start = 0;
    for (int p : pieces) {
      const int64_t len = g.values[p].sizes[static_cast<size_t>(dim)];
      Node s;
      s.op = "aten::slice";
      s.overload = "Tensor";
      s.schema = find_op_schema(s.op, s.overload);
      s.arg_names = {"self", "dim", "start", "end", "step"};
      s.args = {n.args[0], Arg::integer(dim), Arg::integer(start), Arg::integer(start + len), Arg::integer(1)};
      s.outputs = {Arg::tensor(p)};
      s.source = n.source;
      s.name = n.name;
      nodes.push_back(std::move(s));
      start += len;
    }
    ++changes;
  }
  g.nodes = std::move(nodes);
  g.compact();
  return changes;
}

}  // namespace exporter
}  // namespace ember
