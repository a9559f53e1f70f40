// Placement of tensor lifetimes in one shared region: each lifetime gets a byte offset such
// that no two lifetimes live at the same node overlap in memory, and the region (the highest
// end) is as small as possible. The lower bound is the peak of simultaneously live bytes;
// reaching it is not always possible (the problem is NP-hard), so placement runs several
// greedy orderings, then a seeded local search over the best ordering until it reaches the
// bound or spends its budget. Deterministic: the same lifetimes give the same offsets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace exporter {

struct Lifetime {
  int value = -1;
  int first = 0;  // node index of first definition/use
  int last = 0;   // node index of last use (num_nodes for graph outputs)
  size_t size = 0;
};

// Peak of simultaneously live bytes: no placement of `lifetimes` is smaller.
size_t live_bytes_peak(const std::vector<Lifetime>& lifetimes);

struct PlacementOptions {
  // Local-search budget in units of "one placed neighbour visited" (a full placement of n
  // lifetimes costs about twice the number of overlapping pairs). 0: greedy orderings only.
  // The search stops earlier at the lower bound, which every graph of docs/memory-plans.md
  // reaches within 4M. A graph that cannot reach it spends the whole budget: at -O2, random
  // graphs of 1,000 and 3,000 lifetimes with long-lived tensors take 1.1 and 1.6 s in all
  // (0.07 and 0.66 s of which are the greedy orderings); mamba2's 237 take 0.16 s.
  uint64_t search_budget = 8ull << 20;
  uint64_t seed = 0x5eed;
};

struct Placement {
  std::vector<int64_t> offsets;  // per lifetime index
  size_t size = 0;               // bytes of the region
  size_t greedy_size = 0;        // the best greedy ordering's size, before the search
  std::string strategy;          // the greedy ordering and fit that the search started from
  int search_steps = 0;          // orderings tried by the search
  int search_improvements = 0;   // of which made the region smaller
};

Placement place_lifetimes(const std::vector<Lifetime>& lifetimes, const PlacementOptions& options = {});

// Greedy placements of one ordering each (tests and reports): largest first with best fit,
// and first use first with first fit. Return the region's size.
size_t place_by_size(const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* offsets);
size_t place_by_first_use(const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* offsets);

// Empty when every lifetime has an offset (>= 0) and no two lifetimes live at the same node
// overlap in memory; otherwise says which lifetime or pair is wrong.
std::string check_placement(const std::vector<Lifetime>& lifetimes, const std::vector<int64_t>& offsets);

}  // namespace exporter
}  // namespace ember
