#include "exporter/partition/partitioner.h"

#include <algorithm>
#include <set>

namespace ember {
namespace exporter {

absl::StatusOr<Partition> make_partition(const Graph& g, std::vector<int> nodes) {
  Partition p;
  if (nodes.empty()) return absl::InvalidArgumentError("empty partition");
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::set<int> in_set(nodes.begin(), nodes.end());
  std::set<int> produced;
  for (int i : nodes) {
    if (i < 0 || i >= static_cast<int>(g.nodes.size()) || g.nodes[i].erased) {
      return absl::InvalidArgumentError("partition refers to an invalid node");
    }
    for (int r : g.nodes[i].output_values()) produced.insert(r);
  }
  std::set<int> seen_in;
  for (int i : nodes) {
    for (const Arg& a : g.nodes[i].args) {
      for (int r : a.value_refs()) {
        if (!produced.count(r) && seen_in.insert(r).second) p.inputs.push_back(r);
      }
    }
  }
  std::set<int> outs;
  for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
    if (in_set.count(k) || g.nodes[k].erased) continue;
    for (const Arg& a : g.nodes[k].args) {
      for (int r : a.value_refs()) {
        if (!produced.count(r)) continue;
        if (k < nodes.back()) {
          return absl::InvalidArgumentError("partition is not convex: node " + std::to_string(k) +
                                            " reads a partition value before the partition ends");
        }
        outs.insert(r);
      }
    }
  }
  for (const GraphOutput& o : g.outputs) if (o.value >= 0 && produced.count(o.value)) outs.insert(o.value);
  for (const WriteBack& w : g.write_backs) if (produced.count(w.from)) outs.insert(w.from);
  for (int i : nodes) for (int r : g.nodes[i].output_values()) if (outs.count(r)) {
    p.outputs.push_back(r);
    outs.erase(r);
  }
  p.nodes = nodes;
  return p;
}

absl::StatusOr<int> apply_partitioner(Graph& g, Partitioner& partitioner,
                                      std::vector<DelegateRecord>* delegates) {
  std::vector<std::vector<int>> sets = partitioner.claim(g);
  std::set<int> taken;
  std::vector<std::pair<Partition, DelegateBlob>> made;
  for (auto& s : sets) {
    for (int i : s) {
      if (!taken.insert(i).second) {
        return absl::InvalidArgumentError(partitioner.backend_id() + " claimed node " + std::to_string(i) + " twice");
      }
    }
    auto p = make_partition(g, s);
    if (!p.ok()) return absl::InvalidArgumentError(partitioner.backend_id() + ": " + std::string(p.status().message()));
    auto blob = partitioner.preprocess(g, *p);
    if (!blob.ok()) return blob.status();
    made.emplace_back(std::move(*p), std::move(*blob));
  }
  for (auto& [p, blob] : made) {
    int index = static_cast<int>(delegates->size());
    Node d;
    d.op = std::string(kDelegateOpPrefix) + std::to_string(index);
    d.overload = "default";
    // Constants the blob reads from segments are not call arguments.
    std::set<int> embedded(blob.constants.begin(), blob.constants.end());
    std::vector<int> call_inputs;
    for (int v : p.inputs) {
      const Value& value = g.values[v];
      if (value.role == ValueRole::Constant && embedded.count(value.constant)) continue;
      call_inputs.push_back(v);
    }
    d.args.push_back(Arg::tensor_list(call_inputs));
    d.arg_names.push_back("inputs");
    delegates->push_back(DelegateRecord{partitioner.backend_id(), std::move(blob)});
    for (int o : p.outputs) d.outputs.push_back(Arg::tensor(o));
    d.source = g.nodes[p.nodes.back()].source;
    for (int i : p.nodes) g.nodes[i].erased = true;
    g.nodes[p.nodes.back()] = std::move(d);
  }
  g.compact();
  return static_cast<int>(made.size());
}

}  // namespace exporter
}  // namespace ember
