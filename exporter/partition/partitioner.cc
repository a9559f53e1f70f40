#include "exporter/partition/partitioner.h"

#include "exporter/partition/schedulable_groups.h"

#include <algorithm>
#include <map>
#include <optional>
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
        // Symbolic sizes (a view's SymInts) are not inputs: a backend that claims such a node
        // takes the sizes from its output value (a delegate call's inputs are tensors).
        if (!produced.count(r) && g.values[r].type == ValueType::Tensor && seen_in.insert(r).second) p.inputs.push_back(r);
      }
    }
  }
  std::set<int> outs;
  for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
    if (in_set.count(k) || g.nodes[k].erased) continue;
    for (const Arg& a : g.nodes[k].args) {
      for (int r : a.value_refs()) if (produced.count(r)) outs.insert(r);
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

std::string summarize_partition(const Graph& g, const Partition& p) {
  std::map<std::string, int> counts;
  for (int i : p.nodes) counts[g.nodes[i].kernel_name()]++;
  std::string s;
  for (const auto& [name, n] : counts) s += (s.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  return s;
}

uint32_t ConstantSlots::existing(int index) {
  for (size_t k = 0; k < slots_.size(); ++k) {
    if (slots_[k] == index) return static_cast<uint32_t>(k);
  }
  slots_.push_back(index);
  return static_cast<uint32_t>(slots_.size() - 1);
}

uint32_t ConstantSlots::add(int original, const std::string& name, ScalarType dtype, std::vector<int64_t> sizes,
                            std::vector<uint8_t> data) {
  Constant c;
  c.name = name;
  c.dtype = dtype;
  c.sizes = std::move(sizes);
  c.data = std::move(data);
  added_.push_back(std::move(c));
  slots_.push_back(-static_cast<int>(added_.size()));
  if (original >= 0 && std::find(replaced_.begin(), replaced_.end(), original) == replaced_.end()) {
    replaced_.push_back(original);
  }
  return static_cast<uint32_t>(slots_.size() - 1);
}

void ConstantSlots::finish(DelegateBlob* blob) const {
  blob->constants = slots_;
  blob->new_constants = added_;
  blob->replaced = replaced_;
  blob->read_at_init = read_at_init_;
}

namespace {

// Puts g's live nodes in a topological order of the edges `deps` (node i after every node in
// deps[i]; node i stands for rep[i], so edges inside one merged node vanish). Among ready
// nodes the smallest (rank(i), i) goes first. Returns the order taken (original indices), or
// nothing, leaving g alone, on a cycle. Producers are renumbered.
std::optional<std::vector<int>> reorder_nodes(Graph& g, const std::vector<std::vector<int>>& deps,
                                              const std::vector<int>& rep, const std::function<int(int)>& rank) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::set<int>> succ;
  std::vector<int> indegree;
  contract_dependencies(deps, rep, &succ, &indegree);
  std::set<std::pair<int, int>> ready;
  for (int i = 0; i < n; ++i) if (!g.nodes[i].erased && indegree[i] == 0) ready.insert({rank(i), i});
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(i);
    for (int s : succ[i]) if (--indegree[s] == 0) ready.insert({rank(s), s});
  }
  if (order.size() != g.num_live_nodes()) return std::nullopt;
  std::vector<Node> nodes;
  nodes.reserve(order.size());
  for (int i : order) nodes.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(nodes);
  g.compact();
  return order;
}

}  // namespace

bool cluster_supported_nodes(Graph& g, const std::function<bool(int)>& supported) {
  std::vector<int> rank(g.nodes.size(), 1), rep(g.nodes.size());
  for (size_t i = 0; i < rank.size(); ++i) {
    rep[i] = static_cast<int>(i);
    if (!g.nodes[i].erased && !supported(static_cast<int>(i))) rank[i] = 0;  // unsupported first
  }
  auto order = reorder_nodes(g, g.node_dependencies(), rep, [&](int i) { return rank[i]; });
  return order && !std::is_sorted(order->begin(), order->end());
}

namespace {

using Lowered = std::vector<std::pair<Partition, DelegateBlob>>;

// Lowers `nodes` (convex, in graph order) as one delegate call. When the backend fails, the
// set is split in two halves of the graph order and each half lowered on its own (a prefix or
// suffix of a convex set is convex, and splitting a call keeps the calls schedulable); a node
// that fails alone stays on the portable kernels, with the backend's reason in `report`.
absl::Status lower_or_fall_back(const Graph& g, Partitioner& partitioner, const std::vector<int>& nodes,
                                const PartitionOptions& options, Lowered* made, PartitionReport* report) {
  auto p = make_partition(g, nodes);
  if (!p.ok()) return absl::InvalidArgumentError(partitioner.backend_id() + ": " + std::string(p.status().message()));
  auto blob = partitioner.preprocess(g, *p);
  if (blob.ok()) {
    made->emplace_back(std::move(*p), std::move(*blob));
    return absl::OkStatus();
  }
  if (options.strict) return blob.status();
  if (absl::IsFailedPrecondition(blob.status())) {
    // The backend cannot lower anything now (its compiler library is missing): no halving,
    // one report for the whole set.
    report->fallbacks.push_back(partitioner.backend_id() + " could not lower " + std::to_string(nodes.size()) +
                                " claimed node(s) ('" + g.nodes[nodes.front()].name + "' .. '" +
                                g.nodes[nodes.back()].name + "'); they run on the portable kernels: " +
                                std::string(blob.status().message()));
    return absl::OkStatus();
  }
  if (nodes.size() == 1) {
    const Node& n = g.nodes[nodes[0]];
    report->fallbacks.push_back(partitioner.backend_id() + " could not lower node '" + n.name + "' (" +
                                n.kernel_name() + "); it runs on the portable kernels: " +
                                std::string(blob.status().message()));
    return absl::OkStatus();
  }
  const size_t half = nodes.size() / 2;
  const std::vector<int> first(nodes.begin(), nodes.begin() + long(half)), second(nodes.begin() + long(half), nodes.end());
  if (auto s = lower_or_fall_back(g, partitioner, first, options, made, report); !s.ok()) return s;
  return lower_or_fall_back(g, partitioner, second, options, made, report);
}

}  // namespace

absl::StatusOr<int> apply_partitioner(Graph& g, Partitioner& partitioner, std::vector<DelegateRecord>* delegates,
                                      const PartitionOptions& options, PartitionReport* report) {
  PartitionReport local_report;
  if (report == nullptr) report = &local_report;
  if (partitioner.prefers_clustering()) {
    cluster_supported_nodes(g, [&](int i) { return partitioner.supports(g, i); });
  }
  std::vector<std::vector<int>> sets = partitioner.claim(g);
  sets.erase(std::remove_if(sets.begin(), sets.end(), [](const std::vector<int>& s) { return s.empty(); }), sets.end());
  std::set<int> taken;
  for (auto& s : sets) {
    for (int i : s) {
      if (i < 0 || i >= static_cast<int>(g.nodes.size()) || g.nodes[i].erased) {
        return absl::InvalidArgumentError(partitioner.backend_id() + " claimed an invalid node " + std::to_string(i));
      }
      if (!taken.insert(i).second) {
        return absl::InvalidArgumentError(partitioner.backend_id() + " claimed node " + std::to_string(i) + " twice");
      }
    }
  }
  const size_t claimed_sets = sets.size();
  sets = schedulable_groups(g.node_dependencies(), sets, &report->regrouping);
  if (report->regrouping > 1) {
    report->notes.push_back(partitioner.backend_id() + ": " + std::to_string(claimed_sets) +
                            " claimed node sets were not schedulable as delegate calls (" +
                            (report->regrouping == 2 ? "a path left a set and re-entered it"
                                                     : "sets fed each other") +
                            "); re-formed as " + std::to_string(sets.size()) + " calls");
  }
  Lowered made;
  for (const auto& s : sets) {
    if (auto st = lower_or_fall_back(g, partitioner, s, options, &made, report); !st.ok()) return st;
  }
  const std::vector<std::vector<int>> deps = g.node_dependencies();
  std::vector<int> rep(g.nodes.size());
  for (size_t i = 0; i < rep.size(); ++i) rep[i] = static_cast<int>(i);
  for (auto& [p, blob] : made) {
    int index = static_cast<int>(delegates->size());
    Node d;
    d.op = std::string(kDelegateOpPrefix) + std::to_string(index);
    d.overload = "default";
    // New constants join the graph; their slots get the real indices.
    for (int& c : blob.constants) {
      if (c >= 0) continue;
      const size_t j = static_cast<size_t>(-1 - c);
      if (j >= blob.new_constants.size()) {
        return absl::InternalError(partitioner.backend_id() + ": constant slot refers to a missing new constant");
      }
      g.constants.push_back(blob.new_constants[j]);
      c = static_cast<int>(g.constants.size()) - 1;
    }
    blob.new_constants.clear();
    // Constants the blob reads from segments (or replaces) are not call arguments.
    std::set<int> embedded(blob.constants.begin(), blob.constants.end());
    embedded.insert(blob.replaced.begin(), blob.replaced.end());
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
    // Debug name of the call: its first and last members (in graph order) and their count.
    const std::string& first = g.nodes[p.nodes.front()].name;
    const std::string& last = g.nodes[p.nodes.back()].name;
    d.name = p.nodes.size() == 1 ? first
                                 : first + ".." + last + " (" + std::to_string(p.nodes.size()) + " nodes)";
    for (int i : p.nodes) {
      g.nodes[i].erased = true;
      rep[i] = p.nodes.back();
    }
    g.nodes[p.nodes.back()] = std::move(d);
  }
  // A delegate node sits where its last member was, but a node outside the partition that
  // came before that point may read one of its outputs (the partition is convex, so it never
  // feeds back in): such nodes move after it. Otherwise the order is kept.
  if (!reorder_nodes(g, deps, rep, [](int) { return 0; })) {  // schedulable_groups rules this out
    return absl::InternalError(partitioner.backend_id() +
                               ": delegate calls left the graph cyclic after regrouping; please report this graph");
  }
  return static_cast<int>(made.size());
}

}  // namespace exporter
}  // namespace ember
