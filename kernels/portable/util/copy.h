// Copies with dtype conversion, contiguous or through a strided view of the input (the
// building block of permute/transpose/expand/slice/select/flip/diagonal/unfold/repeat...).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/tensor_util.h"

namespace ember {
namespace portable {

// The compute kind that converts between two dtypes without needless precision loss.
inline ScalarType conversion_dtype(ScalarType from, ScalarType to) {
  if (!is_floating(from) && !is_floating(to)) return ScalarType::Int64;
  if (from == ScalarType::Float64 || to == ScalarType::Float64) return ScalarType::Float64;
  return ScalarType::Float32;
}

// dst[i] = convert(src[i]) for i in [0, n).
inline void copy_convert(const void* src, ScalarType st, void* dst, ScalarType dt, int64_t n) {
  if (n <= 0) return;
  if (st == dt) {
    copy_bytes(dst, src, static_cast<size_t>(n) * element_size(st));
    return;
  }
  EMBER_DISPATCH_COMPUTE(conversion_dtype(st, dt), C, {
    for (int64_t i = 0; i < n; ++i) store_as<C>(dst, dt, i, load_as<C>(src, st, i));
  });
}

// A view of a tensor's elements: element (i0..ik) is at offset + sum(ij * strides[j]).
struct StridedView {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  int64_t offset = 0;

  // The identity view of a contiguous tensor.
  static StridedView of(const Tensor& t) {
    StridedView v;
    v.rank = t.rank;
    for (int i = 0; i < t.rank; ++i) v.sizes[i] = t.sizes[i];
    contiguous_strides(t.sizes, t.rank, v.strides);
    return v;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= sizes[i];
    return n;
  }
  // Drops size-1 dims and merges dims that are contiguous together.
  void coalesce() {
    int r = 0;
    for (int d = 0; d < rank; ++d) {
      if (sizes[d] == 1) continue;
      if (r > 0 && strides[r - 1] == strides[d] * sizes[d]) {
        sizes[r - 1] *= sizes[d];
        strides[r - 1] = strides[d];
        continue;
      }
      sizes[r] = sizes[d];
      strides[r] = strides[d];
      ++r;
    }
    rank = r;
  }
};

// The diagonal of dims d1 != d2 (already wrapped) of `base`, shifted by `offset` (> 0: above
// the main diagonal): the other dims in order, then the diagonal (length >= 0) as the last.
inline StridedView diagonal_view(const StridedView& base, int64_t offset, int64_t d1, int64_t d2) {
  StridedView v;
  int64_t len;
  if (offset >= 0) {
    len = base.sizes[d2] - offset < base.sizes[d1] ? base.sizes[d2] - offset : base.sizes[d1];
    v.offset = offset * base.strides[d2];
  } else {
    len = base.sizes[d1] + offset < base.sizes[d2] ? base.sizes[d1] + offset : base.sizes[d2];
    v.offset = -offset * base.strides[d1];
  }
  if (len < 0) len = 0;
  for (int d = 0; d < base.rank; ++d) {
    if (d == d1 || d == d2) continue;
    v.sizes[v.rank] = base.sizes[d];
    v.strides[v.rank] = base.strides[d];
    ++v.rank;
  }
  v.sizes[v.rank] = len;
  v.strides[v.rank] = base.strides[d1] + base.strides[d2];
  ++v.rank;
  return v;
}

namespace detail {
template <typename T>
void gather_runs(const StridedView& v, const T* src, T* dst, int64_t begin, int64_t end) {
  if (v.rank == 0) {
    for (int64_t i = begin; i < end; ++i) dst[i] = src[v.offset];
    return;
  }
  int64_t idx[kMaxRank];
  int64_t rem = begin, off = v.offset;
  for (int d = v.rank - 1; d >= 0; --d) {
    idx[d] = rem % v.sizes[d];
    rem /= v.sizes[d];
    off += idx[d] * v.strides[d];
  }
  const int last = v.rank - 1;
  const int64_t inner = v.strides[last];
  int64_t i = begin;
  while (i < end) {
    int64_t n = v.sizes[last] - idx[last];
    if (n > end - i) n = end - i;
    if (inner == 1) {
      std::memcpy(dst + i, src + off, static_cast<size_t>(n) * sizeof(T));
    } else {
      for (int64_t j = 0; j < n; ++j) dst[i + j] = src[off + j * inner];
    }
    i += n;
    if (i >= end) break;
    off -= idx[last] * inner;
    idx[last] = 0;
    for (int d = last - 1; d >= 0; --d) {
      ++idx[d];
      off += v.strides[d];
      if (idx[d] < v.sizes[d]) break;
      off -= idx[d] * v.strides[d];
      idx[d] = 0;
    }
  }
}
}  // namespace detail

// Writes the elements of view `v` of `in` (row-major over v's sizes) into contiguous `out`
// (already resized; out.numel() == v.numel()), converting dtypes when they differ.
// `in` and `out` must not overlap unless the view is the identity.
inline void copy_view(KernelContext& ctx, const Tensor& in, StridedView v, Tensor& out) {
  int64_t total = v.numel();
  if (total == 0) return;
  v.coalesce();
  if (in.dtype == out.dtype) {
    const size_t es = element_size(in.dtype);
    auto run = [&](auto word) {
      using W = decltype(word);
      const W* src = static_cast<const W*>(in.data);
      W* dst = static_cast<W*>(out.data);
      if (v.rank == 1 && v.strides[0] == 1 && src + v.offset == dst) return;
      parallel_for_range(ctx, total, kElementwiseGrain * 4, [&](int64_t b, int64_t e) {
        detail::gather_runs<W>(v, src, dst, b, e);
      });
    };
    switch (es) {
      case 1: run(uint8_t{}); break;
      case 2: run(uint16_t{}); break;
      case 4: run(uint32_t{}); break;
      default: run(uint64_t{}); break;
    }
    return;
  }
  // Converting copy: element by element.
  EMBER_DISPATCH_COMPUTE(conversion_dtype(in.dtype, out.dtype), C, {
    int64_t idx[kMaxRank] = {};
    for (int64_t i = 0; i < total; ++i) {
      int64_t off = v.offset;
      for (int d = 0; d < v.rank; ++d) off += idx[d] * v.strides[d];
      store_as<C>(out.data, out.dtype, i, load_as<C>(in.data, in.dtype, off));
      for (int d = v.rank - 1; d >= 0; --d) {
        if (++idx[d] < v.sizes[d]) break;
        idx[d] = 0;
      }
    }
  });
}

// Writes contiguous `src` (numel == v.numel()) into view `v` of `dst`, converting dtypes.
inline void copy_into_view(const Tensor& src, Tensor& dst, StridedView v) {
  int64_t total = v.numel();
  if (total == 0) return;
  v.coalesce();
  EMBER_DISPATCH_COMPUTE(conversion_dtype(src.dtype, dst.dtype), C, {
    int64_t idx[kMaxRank] = {};
    for (int64_t i = 0; i < total; ++i) {
      int64_t off = v.offset;
      for (int d = 0; d < v.rank; ++d) off += idx[d] * v.strides[d];
      store_as<C>(dst.data, dst.dtype, off, load_as<C>(src.data, src.dtype, i));
      for (int d = v.rank - 1; d >= 0; --d) {
        if (++idx[d] < v.sizes[d]) break;
        idx[d] = 0;
      }
    }
  });
}

}  // namespace portable
}  // namespace ember
