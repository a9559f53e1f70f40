// Shape helpers for the portable kernels: output resizing with error reporting, layout
// checks, broadcasting of shapes, and a chunked parallel loop over the context's pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/kernel_args.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

// A shape held by value (rank <= kMaxRank).
struct Shape {
  int rank = 0;
  int64_t d[kMaxRank] = {};

  Shape() = default;
  explicit Shape(const Tensor& t) : rank(t.rank) {
    for (int i = 0; i < rank; ++i) d[i] = t.sizes[i];
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  bool push(int64_t v) {
    if (rank >= kMaxRank) return false;
    d[rank++] = v;
    return true;
  }
  Span<const int64_t> span() const { return Span<const int64_t>(d, static_cast<size_t>(rank)); }
};

// Fails (NotSupported) unless every given tensor is contiguous.
inline bool require_contiguous(KernelArgs& a, const Tensor* t) {
  if (!a.ok()) return false;
  if (t != nullptr && !t->is_contiguous()) {
    return a.fail("non-contiguous dim order is not supported by the portable kernel",
                  Error::NotSupported);
  }
  return true;
}

// Resizes `out` to `shape`; records an error when the rank differs or it does not fit.
inline bool resize_to(KernelArgs& a, Tensor* out, const Shape& shape) {
  if (!a.ok() || out == nullptr) return false;
  if (!require_contiguous(a, out)) return false;
  if (out->rank != shape.rank) return a.fail("output tensor has the wrong rank");
  Error e = resize_tensor(*out, shape.span());
  if (e != Error::Ok) return a.fail("output does not fit the planned shape/capacity", e);
  return true;
}
inline bool resize_like(KernelArgs& a, Tensor* out, const Tensor& like) {
  return resize_to(a, out, Shape(like));
}

// Broadcasts two shapes; false when incompatible.
inline bool broadcast_shapes(const Shape& x, const Shape& y, Shape& out) {
  int r = x.rank > y.rank ? x.rank : y.rank;
  out.rank = r;
  for (int i = 0; i < r; ++i) {
    int xi = i - (r - x.rank), yi = i - (r - y.rank);
    int64_t a = xi >= 0 ? x.d[xi] : 1;
    int64_t b = yi >= 0 ? y.d[yi] : 1;
    if (a != b && a != 1 && b != 1) return false;
    out.d[i] = a == 1 ? b : a;
  }
  return true;
}

// Row-major strides (elements) of `s`.
inline void strides_of(const Shape& s, int64_t* strides) { contiguous_strides(s.d, s.rank, strides); }

inline int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs f(begin, end) over [0, total) in chunks of at least `grain` items on the context's
// thread pool (serially when there is none). f must be safe on disjoint ranges.
template <typename F>
void parallel_range(KernelContext& ctx, int64_t total, int64_t grain, const F& f) {
  if (total <= 0) return;
  if (grain < 1) grain = 1;
  int64_t threads = static_cast<int64_t>(ctx.num_threads());
  int64_t chunks = ceil_div64(total, grain);
  if (chunks > threads * 4) chunks = threads * 4;
  if (threads <= 1 || chunks <= 1) {
    f(int64_t{0}, total);
    return;
  }
  struct State {
    const F* f;
    int64_t total;
    int64_t chunk;
  };
  State s{&f, total, ceil_div64(total, chunks)};
  chunks = ceil_div64(total, s.chunk);
  ctx.parallel_for(static_cast<size_t>(chunks), [](void* c, size_t i) {
    const State* st = static_cast<const State*>(c);
    int64_t begin = static_cast<int64_t>(i) * st->chunk;
    int64_t end = begin + st->chunk < st->total ? begin + st->chunk : st->total;
    (*st->f)(begin, end);
  }, &s);
}

// Elements per chunk for cheap elementwise work.
constexpr int64_t kElementwiseGrain = 32768;

// Copies bytes unless source and destination are the same buffer.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (dst != src && n > 0) std::memmove(dst, src, n);
}

}  // namespace portable
}  // namespace ember
