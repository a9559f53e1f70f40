// make_activations_ssa: gives every in-place write to an activation or a user input its own
// value (an input's last version is written back into it at the end).
#include <map>

#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

void rename(Arg& a, const std::map<int, int>& latest) {
  auto map = [&](int r) {
    auto it = latest.find(r);
    return it == latest.end() ? r : it->second;
  };
  if (a.kind == Arg::Kind::Tensor || a.kind == Arg::Kind::SymInt || a.kind == Arg::Kind::SymBool) {
    if (a.ref >= 0) a.ref = map(a.ref);
  }
  if (a.kind == Arg::Kind::Tensors || a.kind == Arg::Kind::OptionalTensors || a.kind == Arg::Kind::SymInts) {
    for (int& r : a.refs) if (r >= 0) r = map(r);
  }
}

}  // namespace

int make_activations_ssa(Graph& g) {
  std::map<int, int> latest;  // original activation value -> its current version
  int changes = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.erased) continue;
    for (Arg& a : n.args) rename(a, latest);
    for (Arg& o : n.outputs) rename(o, latest);
    std::vector<int> reads;
    for (const Arg& a : n.args) for (int r : a.value_refs()) reads.push_back(r);
    for (Arg& o : n.outputs) {
      if (o.kind != Arg::Kind::Tensor || o.ref < 0) continue;
      const int r = o.ref;
      // State writes stay (delegates update state in place); an in-place write into a
      // mutated user input becomes a new value, copied back into the input at the end.
      const ValueRole role = g.values[r].role;
      if (role != ValueRole::Activation && role != ValueRole::UserInput) continue;
      bool aliases = false;
      for (int x : reads) aliases |= x == r;
      if (!aliases) continue;
      Value v = g.values[r];
      v.id = -1;
      v.name = g.values[r].name + "_w" + std::to_string(i);
      v.producer = static_cast<int>(i);
      v.role = ValueRole::Activation;
      const int nv = g.add_value(v);
      o.ref = nv;
      for (auto& [from, to] : latest) if (to == r) to = nv;
      latest[r] = nv;
      ++changes;
    }
  }
  for (GraphOutput& o : g.outputs) {
    if (o.value >= 0 && latest.count(o.value)) o.value = latest[o.value];
  }
  for (WriteBack& w : g.write_backs) {
    if (latest.count(w.from)) w.from = latest[w.from];
  }
  for (int input : g.inputs) {
    auto it = latest.find(input);
    if (it == latest.end()) continue;
    bool written_back = false;
    for (const WriteBack& w : g.write_backs) written_back |= w.to == input;
    if (!written_back) g.write_backs.push_back(WriteBack{it->second, input});
  }
  g.compact();
  return changes;
}

}  // namespace exporter
}  // namespace ember
