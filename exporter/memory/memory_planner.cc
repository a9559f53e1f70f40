#include "exporter/memory/memory_planner.h"

#include <algorithm>
#include <map>

namespace ember {
namespace exporter {
namespace {

size_t align(size_t n) { return (n + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment; }

bool overlaps(const Lifetime& a, const Lifetime& b) { return a.first <= b.last && b.first <= a.last; }

// Places lifetimes[i] for i in `order`; best_fit chooses the smallest fitting gap, else the
// lowest one.
size_t place(const std::vector<Lifetime>& lts, const std::vector<size_t>& order, bool best_fit,
             std::vector<int64_t>* offsets) {
  offsets->assign(lts.size(), -1);
  std::vector<size_t> placed;
  size_t total = 0;
  for (size_t i : order) {
    const Lifetime& t = lts[i];
    std::vector<std::pair<int64_t, int64_t>> busy;  // [begin, end)
    for (size_t j : placed) {
      if (overlaps(t, lts[j])) busy.emplace_back((*offsets)[j], (*offsets)[j] + static_cast<int64_t>(lts[j].size));
    }
    std::sort(busy.begin(), busy.end());
    int64_t cursor = 0;
    int64_t best = -1;
    int64_t best_gap = INT64_MAX;
    for (const auto& [b, e] : busy) {
      if (b > cursor) {
        int64_t gap = b - cursor;
        if (gap >= static_cast<int64_t>(t.size)) {
          if (!best_fit) { best = cursor; break; }
          if (gap < best_gap) { best_gap = gap; best = cursor; }
        }
      }
      cursor = std::max(cursor, e);
    }
    if (best < 0) best = cursor;
    (*offsets)[i] = best;
    placed.push_back(i);
    total = std::max(total, static_cast<size_t>(best) + t.size);
  }
  return total;
}

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

size_t place_by_size(const std::vector<Lifetime>& lts, std::vector<int64_t>* offsets) {
  std::vector<size_t> order(lts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (lts[a].size != lts[b].size) return lts[a].size > lts[b].size;
    return lts[a].first < lts[b].first;
  });
  return place(lts, order, /*best_fit=*/true, offsets);
}

size_t place_by_first_use(const std::vector<Lifetime>& lts, std::vector<int64_t>* offsets) {
  std::vector<size_t> order(lts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (lts[a].first != lts[b].first) return lts[a].first < lts[b].first;
    return lts[a].size > lts[b].size;
  });
  return place(lts, order, /*best_fit=*/false, offsets);
}

size_t live_bytes_peak(const std::vector<Lifetime>& lts) {
  std::map<int, int64_t> delta;
  for (const Lifetime& l : lts) {
    delta[l.first] += static_cast<int64_t>(l.size);
    delta[l.last + 1] -= static_cast<int64_t>(l.size);
  }
  int64_t live = 0, peak = 0;
  for (auto& [t, d] : delta) {
    live += d;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

MemoryPlan plan_memory(const Graph& g) {
  MemoryPlan plan;
  plan.offset.assign(g.values.size(), -1);
  std::vector<Lifetime> lts = compute_lifetimes(g);
  std::vector<int64_t> a, b;
  plan.size_by_size = place_by_size(lts, &a);
  plan.size_by_first_use = place_by_first_use(lts, &b);
  bool use_a = plan.size_by_size <= plan.size_by_first_use;
  plan.strategy = use_a ? "greedy-by-size (best fit)" : "greedy-by-first-use (first fit)";
  plan.shared_size = use_a ? plan.size_by_size : plan.size_by_first_use;
  const std::vector<int64_t>& chosen = use_a ? a : b;
  for (size_t i = 0; i < lts.size(); ++i) plan.offset[lts[i].value] = chosen[i];
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
