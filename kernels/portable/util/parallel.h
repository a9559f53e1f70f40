// The chunked parallel loop of the portable kernels: splits [0, total) into ranges of at
// least `grain` items and runs them on the context's thread pool.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs f(begin, end) over [0, total) in chunks of at least `grain` items, spread over the
// context's thread pool (serially when there is none). `f` must be safe to run concurrently
// on disjoint ranges.
template <typename F>
void parallel_for_range(KernelContext& ctx, int64_t total, int64_t grain, const F& f) {
  if (total <= 0) return;
  if (grain < 1) grain = 1;
  int64_t threads = static_cast<int64_t>(ctx.num_threads());
  int64_t chunks = ceil_div(total, grain);
  int64_t max_chunks = threads * 4;
  if (chunks > max_chunks) chunks = max_chunks;
  if (threads <= 1 || chunks <= 1) {
    f(int64_t{0}, total);
    return;
  }
  struct State {
    const F* f;
    int64_t total;
    int64_t chunk;
  };
  State s{&f, total, ceil_div(total, chunks)};
  chunks = ceil_div(total, s.chunk);
  ctx.parallel_for(static_cast<size_t>(chunks), [](void* c, size_t i) {
    const State* st = static_cast<const State*>(c);
    int64_t begin = static_cast<int64_t>(i) * st->chunk;
    int64_t end = begin + st->chunk < st->total ? begin + st->chunk : st->total;
    (*st->f)(begin, end);
  }, &s);
}

// Elements per chunk for cheap elementwise work.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace portable
}  // namespace ember
