// Shape helpers for the portable kernels: output resizing with error reporting, layout and
// dtype checks, and broadcasting of shapes. (The parallel loop is in parallel.h.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
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

// Row-major multi-index iteration over a shape: idx[] holds the current element's coordinates.
struct Counter {
  int rank;
  const int64_t* sizes;
  int64_t idx[kMaxRank] = {};
  Counter(int r, const int64_t* s) : rank(r), sizes(s) {}
  void next() {
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) return;
      idx[d] = 0;
    }
  }
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

// True when `t` is a contiguous float32 tensor; otherwise records an error on `a`.
inline bool require_float(KernelArgs& a, const Tensor* t) {
  if (!a.ok() || t == nullptr) return false;
  if (t->dtype != ScalarType::Float32) {
    return a.fail("only float32 tensors are supported", Error::InvalidArgument);
  }
  if (!t->is_contiguous()) return a.fail("non-contiguous dim order is not supported", Error::NotSupported);
  return true;
}

namespace detail {
// Resizes `out` (already checked non-null) to `sizes`; `rank_message` when the rank differs.
inline bool resize_checked(KernelArgs& a, Tensor* out, Span<const int64_t> sizes, const char* rank_message) {
  if (out->rank != static_cast<int>(sizes.size())) return a.fail(rank_message, Error::InvalidArgument);
  Error e = resize_tensor(*out, sizes);
  if (e != Error::Ok) return a.fail("output does not fit the planned shape/capacity", e);
  return true;
}
}  // namespace detail

// Resizes `out` to `shape`; records an error when it is not contiguous, the rank differs or
// it does not fit.
inline bool resize_to(KernelArgs& a, Tensor* out, const Shape& shape) {
  if (!a.ok() || out == nullptr) return false;
  if (!require_contiguous(a, out)) return false;
  return detail::resize_checked(a, out, shape.span(), "output tensor has the wrong rank");
}

// Resizes `out` to `sizes` (rank entries); records OutOfBounds when it does not fit.
inline bool resize_out(KernelArgs& a, Tensor* out, const int64_t* sizes, int rank) {
  if (!a.ok() || out == nullptr) return false;
  return detail::resize_checked(a, out, Span<const int64_t>(sizes, static_cast<size_t>(rank)),
                                "output has the wrong rank");
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

// Copies bytes unless source and destination are the same buffer.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (dst != src && n > 0) std::memmove(dst, src, n);
}

}  // namespace portable
}  // namespace ember
