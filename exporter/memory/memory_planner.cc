#include "exporter/memory/memory_planner.h"

#include <map>

namespace ember {
namespace exporter {
namespace {

size_t align(size_t n) { return (n + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }

}  // namespace

std::vector<Lifetime> compute_lifetimes(const Graph& g) {
  std::map<int, Lifetime> by_value;
  auto touch = [&](int v, int at) {
    const Value& val = g.values[v];
    if (val.type != ValueType::Tensor || val.role != ValueRole::Activation) return;
    auto it = by_value.find(v);
    if (it == by_value.end()) {
      Lifetime l;
      l.value = v;
      l.first = l.last = at;
      l.size = align(val.nbytes());
      by_value[v] = l;
    } else {
      it->second.first = std::min(it->second.first, at);
      it->second.last = std::max(it->second.last, at);
    }
  };
  int n = static_cast<int>(g.nodes.size());
  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    for (int r : node.output_values()) touch(r, i);
    for (const Arg& a : node.args) for (int r : a.value_refs()) touch(r, i);
  }
  for (const GraphOutput& o : g.outputs) if (o.value >= 0) touch(o.value, n);
  for (const WriteBack& w : g.write_backs) touch(w.from, n);
  std::vector<Lifetime> out;
  for (auto& [v, l] : by_value) out.push_back(l);
  return out;
}

MemoryPlan plan_memory(const Graph& g) {
  MemoryPlan plan;
  plan.offset.assign(g.values.size(), -1);
  std::vector<Lifetime> lts = compute_lifetimes(g);
  Placement placement = place_lifetimes(lts);
  plan.strategy = placement.strategy;
  plan.greedy_size = placement.greedy_size;
  plan.search_steps = placement.search_steps;
  plan.shared_size = placement.size;
  for (size_t i = 0; i < lts.size(); ++i) plan.offset[lts[i].value] = placement.offsets[i];
  size_t cursor = align(plan.shared_size);
  for (const Value& v : g.values) {
    if (v.type != ValueType::Tensor) continue;
    if (v.role != ValueRole::UserInput && v.role != ValueRole::MutableState) continue;
    if (!v.shared_state.empty()) continue;  // in the program's shared state, not this arena
    plan.offset[v.id] = static_cast<int64_t>(cursor);
    cursor += align(v.nbytes());
  }
  plan.fixed_size = cursor - align(plan.shared_size);
  plan.arena_size = cursor;
  plan.lower_bound = live_bytes_peak(lts) + plan.fixed_size;
  return plan;
}

}  // namespace exporter
}  // namespace ember
