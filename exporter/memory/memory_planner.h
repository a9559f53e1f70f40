// Memory planning: every planned tensor (activations, user inputs, mutable state) gets an
// offset in arena 0. Activations share memory by lifetime (over the node list); user inputs
// and mutable state get their own, never-reused space after the shared region.
// Two strategies run (greedy by size with best fit, greedy by first use with first fit);
// the smaller plan wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

constexpr size_t kPlanAlignment = 64;

struct MemoryPlan {
  std::vector<int64_t> offset;  // per value id; -1 when not planned
  size_t arena_size = 0;        // total bytes of arena 0
  size_t shared_size = 0;       // bytes of the lifetime-shared activation region
  size_t fixed_size = 0;        // bytes of inputs + mutable state
  size_t lower_bound = 0;       // peak of simultaneously live bytes (+ fixed)
  std::string strategy;         // the strategy that won
  size_t size_by_size = 0;      // shared size of each strategy
  size_t size_by_first_use = 0;
};

struct Lifetime {
  int value = -1;
  int first = 0;  // node index of first definition/use
  int last = 0;   // node index of last use (num_nodes for graph outputs)
  size_t size = 0;
};

// Lifetimes of the activation tensors of `g` (compacted: no erased nodes).
std::vector<Lifetime> compute_lifetimes(const Graph& g);

// Places `lifetimes` (greedy); returns offsets by lifetime index and the total size.
size_t place_by_size(const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* offsets);
size_t place_by_first_use(const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* offsets);
size_t live_bytes_peak(const std::vector<Lifetime>& lifetimes);

MemoryPlan plan_memory(const Graph& g);

}  // namespace exporter
}  // namespace ember
