// Memory planning: every planned tensor (activations, user inputs, mutable state) gets an
// offset in arena 0. Activations share memory by lifetime (over the node list), placed by
// placement.h (greedy orderings, then a local search towards the live-bytes lower bound);
// user inputs and mutable state get their own, never-reused space after the shared region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exporter/ir/graph.h"
#include "exporter/memory/placement.h"

namespace ember {
namespace exporter {

constexpr size_t kPlanAlignment = 64;

struct MemoryPlan {
  std::vector<int64_t> offset;  // per value id; -1 when not planned
  size_t arena_size = 0;        // total bytes of arena 0
  size_t shared_size = 0;       // bytes of the lifetime-shared activation region
  size_t fixed_size = 0;        // bytes of inputs + mutable state
  size_t lower_bound = 0;       // peak of simultaneously live bytes (+ fixed)
  std::string strategy;         // the greedy ordering the local search started from
  size_t greedy_size = 0;       // shared size of the best greedy ordering, before the search
  int search_steps = 0;         // orderings the local search tried
};

// Lifetimes of the activation tensors of `g` (compacted: no erased nodes).
std::vector<Lifetime> compute_lifetimes(const Graph& g);

MemoryPlan plan_memory(const Graph& g);

}  // namespace exporter
}  // namespace ember
