// Small helpers shared by the conv/linalg/pool/norm/nn portable kernels: dtype and layout
// checks that record an error through KernelArgs, output resizing with a clear message,
// int-list access with PyTorch's "one value means all dims" rule, and chunked parallel loops.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/kernel_args.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

// True when `t` is a contiguous float32 tensor; otherwise records an error on `a`.
inline bool require_float(KernelArgs& a, const Tensor* t) {
  if (!a.ok() || t == nullptr) return false;
  if (t->dtype != ScalarType::Float32) {
    return a.fail("only float32 tensors are supported", Error::InvalidArgument);
  }
  if (!t->is_contiguous()) return a.fail("non-contiguous dim order is not supported", Error::NotSupported);
  return true;
}

// Resizes `out` to `sizes` (rank entries); records OutOfBounds when it does not fit.
inline bool resize_out(KernelArgs& a, Tensor* out, const int64_t* sizes, int rank) {
  if (!a.ok() || out == nullptr) return false;
  if (out->rank != rank) return a.fail("output has the wrong rank", Error::InvalidArgument);
  Error e = resize_tensor(*out, Span<const int64_t>(sizes, static_cast<size_t>(rank)));
  if (e != Error::Ok) {
    return a.fail("output does not fit the planned shape/capacity", e);
  }
  return true;
}

// Element i of an int list where a single value applies to every dimension; `fallback`
// when the list is empty.
inline int64_t list_at(Span<const int64_t> list, size_t i, int64_t fallback) {
  if (list.size() == 0) return fallback;
  if (list.size() == 1) return list[0];
  return i < list.size() ? list[i] : fallback;
}

// Element strides for reading `src` broadcast to `shape` (rank dims, src rank <= rank):
// 0 for broadcast dimensions. False when `src` does not broadcast to `shape`.
inline bool broadcast_strides(const Tensor& src, const int64_t* shape, int rank, int64_t* strides) {
  if (src.rank > rank) return false;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    int sd = d - (rank - src.rank);
    if (sd < 0) {
      strides[d] = 0;
      continue;
    }
    int64_t size = src.sizes[sd];
    if (size == shape[d]) {
      strides[d] = shape[d] == 1 ? 0 : stride;
    } else if (size == 1) {
      strides[d] = 0;
    } else {
      return false;
    }
    stride *= size;
  }
  return true;
}

// dst (contiguous, `shape`) = src broadcast to `shape`; src validated by broadcast_strides.
inline void broadcast_copy(const float* src, const int64_t* strides, const int64_t* shape, int rank,
                           float* dst) {
  int64_t index[kMaxRank] = {0};
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= shape[d];
  if (total == 0) return;
  const int64_t inner = rank > 0 ? shape[rank - 1] : 1;
  const int64_t inner_stride = rank > 0 ? strides[rank - 1] : 0;
  for (int64_t done = 0; done < total; done += inner) {
    int64_t offset = 0;
    for (int d = 0; d < rank - 1; ++d) offset += index[d] * strides[d];
    for (int64_t j = 0; j < inner; ++j) dst[done + j] = src[offset + j * inner_stride];
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs f(begin, end) over [0, total) in chunks of at least `grain` items, spread over the
// context's thread pool. `f` must be safe to run concurrently on disjoint ranges.
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

}  // namespace portable
}  // namespace ember
