#include <set>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

bool is_identity_op(const Node& n) {
  static const std::set<std::string> kIdentity = {
      "aten::dropout", "aten::dropout_", "aten::alpha_dropout", "aten::feature_dropout",
      "aten::feature_alpha_dropout", "aten::alias", "aten::detach", "aten::contiguous",
      "aten::lift_fresh_copy", "aten::positive", "aten::resolve_conj", "aten::resolve_neg",
  };
  return kIdentity.count(n.op) != 0;
}

bool is_assert(const Node& n) {
  return n.op == "aten::_assert_scalar" || n.op == "aten::_assert_tensor_metadata" ||
         n.op == "aten::_assert_async";
}

bool is_inplace(const Node& n) {
  const std::string& op = n.op;
  return op.size() > 1 && op.back() == '_' && op.compare(op.size() - 2, 2, "__") != 0;
}

// True when the op returns its (first) tensor input unchanged for these arguments.
bool is_noop_copy(const Graph& g, const Node& n) {
  if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensor || n.outputs.size() != 1 ||
      n.outputs[0].kind != Arg::Kind::Tensor) {
    return false;
  }
  const Value& in = g.values[n.args[0].ref];
  const Value& out = g.values[n.outputs[0].ref];
  bool same = in.dtype == out.dtype && in.sizes == out.sizes && in.dynamic_dims == out.dynamic_dims;
  if (!same) return false;
  return n.op == "aten::clone" || n.op == "aten::_to_copy" || n.op == "aten::to" ||
         n.op == "aten::type_as" || n.op == "aten::alias_copy";
}

}  // namespace

absl::StatusOr<int> canonicalize(Graph& g) {
  int changes = 0;
  // Values written in place anywhere: a clone of them must stay a copy.
  std::set<int> mutated;
  for (const Node& n : g.nodes) {
    if (!n.erased && is_inplace(n) && !n.args.empty() && n.args[0].kind == Arg::Kind::Tensor) {
      mutated.insert(n.args[0].ref);
    }
  }
  for (const WriteBack& w : g.write_backs) mutated.insert(w.to);
  for (Node& n : g.nodes) {
    if (n.erased) continue;
    if (is_assert(n)) {
      n.erased = true;
      ++changes;
      continue;
    }
    bool identity = is_identity_op(n) || is_noop_copy(g, n);
    if (identity && n.op == "aten::clone" && mutated.count(n.args[0].ref)) identity = false;
    if (identity && !n.args.empty() && n.args[0].kind == Arg::Kind::Tensor && n.outputs.size() == 1 &&
        n.outputs[0].kind == Arg::Kind::Tensor) {
      int in = n.args[0].ref;
      int out = n.outputs[0].ref;
      n.erased = true;
      g.replace_uses(out, in);
      ++changes;
      continue;
    }
    if (is_inplace(n) && !n.args.empty() && n.args[0].kind == Arg::Kind::Tensor) {
      std::string functional = n.op.substr(0, n.op.size() - 1);
      const OpSchema* fs = find_op_schema(functional, n.overload);
      if (fs == nullptr) continue;
      int self = n.args[0].ref;
      Value& sv = g.values[self];
      if (sv.role == ValueRole::Constant) sv.role = ValueRole::MutableState;
      // An in-place op on a user input mutates the caller's tensor, as in PyTorch (newer
      // training IR records no user_input_mutation for it): the method declares it writable.
      if (sv.role == ValueRole::UserInput) g.mutable_inputs.insert(self);
      if (n.outputs.size() == 1 && n.outputs[0].kind == Arg::Kind::Tensor) {
        int out = n.outputs[0].ref;
        if (out != self && (n.op == "aten::resize_" || n.op == "aten::resize_as_")) {
          // A resize may change the shape, which the planned buffer of `self` cannot take:
          // it becomes the functional op writing its own output (the data it keeps is the
          // same prefix of `self`).
          n.op = functional;
          n.schema = fs;
          ++changes;
          continue;
        }
        if (out != self) {
          g.replace_uses(out, self);
          // Later nodes may read the buffer under its own name; nothing else to redirect.
        }
      }
      n.outputs = {Arg::tensor(self)};
      n.op = functional;
      n.schema = fs;
      ++changes;
    }
  }
  g.compact();
  return changes;
}

int eliminate_dead_code(Graph& g) {
  int removed = 0;
  bool again = true;
  while (again) {
    again = false;
    std::vector<int> uses = g.use_counts();
    for (int i = static_cast<int>(g.nodes.size()) - 1; i >= 0; --i) {
      Node& n = g.nodes[i];
      if (n.erased) continue;
      bool used = false;
      bool writes_in_place = false;
      for (int r : n.output_values()) {
        if (uses[r] > 0) used = true;
        const Value& v = g.values[r];
        if (v.role != ValueRole::Activation) writes_in_place = true;
        for (const Arg& a : n.args) for (int x : a.value_refs()) if (x == r) writes_in_place = true;
      }
      if (n.outputs.empty()) used = true;  // unknown side effect: keep
      if (used || writes_in_place) continue;
      n.erased = true;
      for (const Arg& a : n.args) for (int r : a.value_refs()) uses[r]--;
      ++removed;
      again = true;
    }
  }
  g.compact();
  return removed;
}

}  // namespace exporter
}  // namespace ember
