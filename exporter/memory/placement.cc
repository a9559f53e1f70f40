#include "exporter/memory/placement.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <functional>
#include <utility>

namespace ember {
namespace exporter {
namespace {

// conflicts[i]: the lifetimes live at some node where lifetime i is live.
std::vector<std::vector<int>> conflict_lists(const std::vector<Lifetime>& lts) {
  std::vector<int> by_first(lts.size());
  for (size_t i = 0; i < lts.size(); ++i) by_first[i] = static_cast<int>(i);
  std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return lts[a].first < lts[b].first; });
  std::vector<std::vector<int>> conflicts(lts.size());
  for (size_t x = 0; x < by_first.size(); ++x) {
    const Lifetime& a = lts[by_first[x]];
    for (size_t y = x + 1; y < by_first.size() && lts[by_first[y]].first <= a.last; ++y) {
      conflicts[by_first[x]].push_back(by_first[y]);
      conflicts[by_first[y]].push_back(by_first[x]);
    }
  }
  return conflicts;
}

enum class Fit { Best, First };

// Offsets of an order's placement, and the highest end among order[..p) for each p.
struct PlacedState {
  std::vector<int64_t> offsets;
  std::vector<size_t> top_before;
  explicit PlacedState(size_t n) : offsets(n, -1), top_before(n + 1, 0) {}
};

// Places lifetimes in an order: each goes into a gap between the already placed lifetimes it
// lives with (the smallest gap that fits, or the lowest one), else above them all. Re-placing
// from a position keeps the offsets before it, which is what makes the local search cheap.
class OrderedPlacer {
 public:
  OrderedPlacer(const std::vector<Lifetime>& lts, const std::vector<std::vector<int>>& conflicts, Fit fit)
      : lts_(lts), conflicts_(conflicts), fit_(fit), position_(lts.size()) {}

  // Places order[from..]; the offsets of order[..from) in `state` are kept. Returns the
  // region's size. `cost` counts the placed neighbours visited.
  size_t place(const std::vector<int>& order, size_t from, PlacedState* state, uint64_t* cost) {
    std::vector<int64_t>* offsets = &state->offsets;
    std::vector<size_t>& top_before = state->top_before;
    for (size_t p = from; p < order.size(); ++p) position_[order[p]] = p;
    for (size_t p = from; p < order.size(); ++p) {
      const int i = order[p];
      const int64_t size = static_cast<int64_t>(lts_[i].size);
      busy_.clear();
      for (int j : conflicts_[i]) {
        if (position_[j] < p) busy_.emplace_back((*offsets)[j], (*offsets)[j] + static_cast<int64_t>(lts_[j].size));
      }
      *cost += conflicts_[i].size() + 1;
      std::sort(busy_.begin(), busy_.end());
      int64_t cursor = 0, chosen = -1, chosen_gap = INT64_MAX;
      for (const auto& [begin, end] : busy_) {
        const int64_t gap = begin - cursor;
        if (gap >= size && gap < chosen_gap) {
          chosen = cursor;
          chosen_gap = gap;
          if (fit_ == Fit::First) break;
        }
        cursor = std::max(cursor, end);
      }
      if (chosen < 0) chosen = cursor;
      (*offsets)[i] = chosen;
      top_before[p + 1] = std::max(top_before[p], static_cast<size_t>(chosen) + lts_[i].size);
    }
    return top_before[order.size()];
  }

  // Moves order[from] to position `to`, shifting the ones between.
  void move(std::vector<int>* order, size_t from, size_t to) {
    if (from > to) {
      std::rotate(order->begin() + to, order->begin() + from, order->begin() + from + 1);
    } else {
      std::rotate(order->begin() + from, order->begin() + from + 1, order->begin() + to + 1);
    }
    for (size_t p = std::min(from, to); p <= std::max(from, to); ++p) position_[(*order)[p]] = p;
  }

 private:
  const std::vector<Lifetime>& lts_;
  const std::vector<std::vector<int>>& conflicts_;
  Fit fit_;
  std::vector<size_t> position_;  // of each lifetime in the order being placed
  std::vector<std::pair<int64_t, int64_t>> busy_;
};

// splitmix64: a fixed, portable sequence (std:: distributions differ between libraries).
uint64_t next_random(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Ordering {
  const char* name;
  std::vector<int> order;
};

std::vector<int> sorted_indices(size_t n, const std::function<bool(int, int)>& before) {
  std::vector<int> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), before);
  return order;
}

std::vector<Ordering> greedy_orderings(const std::vector<Lifetime>& lts) {
  // Each lifetime's breadth: the most bytes live at any node of its lifetime (the tensors
  // at the busiest nodes are the ones that must pack tightly).
  int last_node = 0;
  for (const Lifetime& l : lts) last_node = std::max(last_node, l.last);
  std::vector<size_t> live(static_cast<size_t>(last_node) + 2, 0);
  for (const Lifetime& l : lts) {
    for (int t = l.first; t <= l.last; ++t) live[t] += l.size;
  }
  std::vector<size_t> breadth(lts.size(), 0);
  for (size_t i = 0; i < lts.size(); ++i) {
    for (int t = lts[i].first; t <= lts[i].last; ++t) breadth[i] = std::max(breadth[i], live[t]);
  }
  auto span = [&](int i) { return static_cast<size_t>(lts[i].last - lts[i].first + 1); };
  size_t n = lts.size();
  std::vector<Ordering> out;
  out.push_back({"largest first", sorted_indices(n, [&](int a, int b) {
                   return lts[a].size != lts[b].size ? lts[a].size > lts[b].size : lts[a].first < lts[b].first;
                 })});
  out.push_back({"first use first", sorted_indices(n, [&](int a, int b) {
                   return lts[a].first != lts[b].first ? lts[a].first < lts[b].first : lts[a].size > lts[b].size;
                 })});
  out.push_back({"longest first", sorted_indices(n, [&](int a, int b) {
                   return span(a) != span(b) ? span(a) > span(b) : lts[a].size > lts[b].size;
                 })});
  out.push_back({"largest area first", sorted_indices(n, [&](int a, int b) {
                   size_t x = span(a) * lts[a].size, y = span(b) * lts[b].size;
                   return x != y ? x > y : lts[a].first < lts[b].first;
                 })});
  out.push_back({"busiest node first", sorted_indices(n, [&](int a, int b) {
                   if (breadth[a] != breadth[b]) return breadth[a] > breadth[b];
                   return lts[a].size != lts[b].size ? lts[a].size > lts[b].size : lts[a].first < lts[b].first;
                 })});
  return out;
}

}  // namespace

size_t live_bytes_peak(const std::vector<Lifetime>& lts) {
  std::vector<std::pair<int, int64_t>> events;
  for (const Lifetime& l : lts) {
    events.emplace_back(l.first, static_cast<int64_t>(l.size));
    events.emplace_back(l.last + 1, -static_cast<int64_t>(l.size));
  }
  std::sort(events.begin(), events.end());  // at one node, ends (negative) before starts
  int64_t live = 0, peak = 0;
  for (const auto& [node, delta] : events) {
    live += delta;
    peak = std::max(peak, live);
  }
  return static_cast<size_t>(peak);
}

Placement place_lifetimes(const std::vector<Lifetime>& lts, const PlacementOptions& options) {
  Placement result;
  result.offsets.assign(lts.size(), -1);
  if (lts.empty()) return result;
  const std::vector<std::vector<int>> conflicts = conflict_lists(lts);
  const size_t bound = live_bytes_peak(lts);

  // Every greedy ordering with both fits; the smallest starts the search.
  std::vector<int> best_order;
  Fit best_fit = Fit::Best;
  result.size = SIZE_MAX;
  uint64_t cost = 0;
  for (const Ordering& ordering : greedy_orderings(lts)) {
    for (Fit fit : {Fit::Best, Fit::First}) {
      OrderedPlacer placer(lts, conflicts, fit);
      PlacedState state(lts.size());
      size_t size = placer.place(ordering.order, 0, &state, &cost);
      if (size < result.size) {
        result.size = size;
        result.offsets = std::move(state.offsets);
        result.strategy = std::string(ordering.name) + (fit == Fit::Best ? ", best fit" : ", first fit");
        best_order = ordering.order;
        best_fit = fit;
      }
    }
  }
  result.greedy_size = result.size;

  // Local search over the best greedy ordering: change the order a little, re-place from
  // the first changed position, keep the change when the region is no larger (equal moves
  // let it cross plateaus), undo it otherwise.
  const size_t n = lts.size();
  if (n < 2) return result;
  OrderedPlacer placer(lts, conflicts, best_fit);
  std::vector<int> order = best_order;
  PlacedState current(n), trial(n);
  uint64_t search_cost = 0;
  uint64_t rng = options.seed;
  size_t current_size = placer.place(order, 0, &current, &search_cost);
  std::vector<size_t> at_top;
  while (current_size > bound && search_cost < options.search_budget) {
    // Half the moves swap two random lifetimes (a < b); half move one that ends at the top
    // (at b) to a random earlier position a.
    const bool swap = next_random(&rng) % 2 == 0;
    size_t a = 0, b = 0;
    if (swap) {
      a = next_random(&rng) % n;
      b = next_random(&rng) % n;
      if (a > b) std::swap(a, b);
    } else {
      at_top.clear();
      for (size_t p = 0; p < n; ++p) {
        if (static_cast<size_t>(current.offsets[order[p]]) + lts[order[p]].size == current_size) at_top.push_back(p);
      }
      b = at_top[next_random(&rng) % at_top.size()];
      if (b > 0) a = next_random(&rng) % b;
    }
    if (a == b) continue;
    if (swap) {
      placer.move(&order, a, b);
      placer.move(&order, b - 1, a);
    } else {
      placer.move(&order, b, a);
    }
    trial = current;
    size_t size = placer.place(order, a, &trial, &search_cost);
    ++result.search_steps;
    if (size <= current_size) {
      if (size < current_size) ++result.search_improvements;
      current_size = size;
      std::swap(current, trial);
    } else if (swap) {
      placer.move(&order, a, b);
      placer.move(&order, b - 1, a);
    } else {
      placer.move(&order, a, b);
    }
  }
  if (current_size < result.size) {
    result.size = current_size;
    result.offsets = std::move(current.offsets);
  }
  return result;
}

namespace {

// One greedy ordering (an index into greedy_orderings) with one fit, no search.
size_t place_greedy(const std::vector<Lifetime>& lts, size_t ordering, Fit fit, std::vector<int64_t>* offsets) {
  std::vector<std::vector<int>> conflicts = conflict_lists(lts);
  OrderedPlacer placer(lts, conflicts, fit);
  PlacedState state(lts.size());
  uint64_t cost = 0;
  size_t size = placer.place(greedy_orderings(lts)[ordering].order, 0, &state, &cost);
  *offsets = std::move(state.offsets);
  return size;
}

}  // namespace

size_t place_by_size(const std::vector<Lifetime>& lts, std::vector<int64_t>* offsets) {
  return place_greedy(lts, 0, Fit::Best, offsets);  // "largest first"
}

size_t place_by_first_use(const std::vector<Lifetime>& lts, std::vector<int64_t>* offsets) {
  return place_greedy(lts, 1, Fit::First, offsets);  // "first use first"
}

std::string check_placement(const std::vector<Lifetime>& lts, const std::vector<int64_t>& offsets) {
  char msg[160];
  if (offsets.size() != lts.size()) return "offsets and lifetimes differ in number";
  for (size_t i = 0; i < lts.size(); ++i) {
    if (offsets[i] < 0) {
      std::snprintf(msg, sizeof(msg), "lifetime %zu (value %d) has no offset", i, lts[i].value);
      return msg;
    }
  }
  const std::vector<std::vector<int>> conflicts = conflict_lists(lts);
  for (size_t i = 0; i < lts.size(); ++i) {
    for (int j : conflicts[i]) {
      int64_t a = offsets[i], b = offsets[j];
      bool overlap = a < b + static_cast<int64_t>(lts[j].size) && b < a + static_cast<int64_t>(lts[i].size);
      if (overlap && lts[i].size > 0 && lts[j].size > 0) {
        std::snprintf(msg, sizeof(msg), "values %d and %d live together but overlap at offsets %lld and %lld",
                      lts[i].value, lts[j].value, static_cast<long long>(a), static_cast<long long>(b));
        return msg;
      }
    }
  }
  return "";
}

}  // namespace exporter
}  // namespace ember
