// Reductions over a set of dims: output shape (keepdim or not, negative dims, empty/None
// dim list = all dims), and iteration over the reduced elements of each output element.
//
//   ReducePlan p;
//   if (!p.init(a, *in, dims, keepdim)) return a.error();
//   if (!resize_to(a, out, p.out_shape)) return a.error();
//   for each output index o: p.for_each_reduced(p.base(o), [&](int64_t offset) {...});
#pragma once

#include <cstdint>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/tensor_util.h"

namespace ember {
namespace portable {

struct ReducePlan {
  Shape out_shape;
  int64_t out_numel = 1;
  int64_t reduce_numel = 1;
  int n_kept = 0;
  int n_red = 0;
  int64_t kept_sizes[kMaxRank] = {};
  int64_t kept_strides[kMaxRank] = {};
  int64_t red_sizes[kMaxRank] = {};
  int64_t red_strides[kMaxRank] = {};

  // `all` (or an empty dims list) reduces every dim. Records an error on `a` for a dim out
  // of range or repeated.
  bool init(KernelArgs& a, const Tensor& in, Span<const int64_t> dims, bool keepdim, bool all = false) {
    if (!require_contiguous(a, &in)) return false;
    bool reduce[kMaxRank] = {};
    const int rank = in.rank;
    if (all || dims.size() == 0) {
      for (int d = 0; d < rank; ++d) reduce[d] = true;
    } else {
      for (size_t i = 0; i < dims.size(); ++i) {
        int64_t d = wrap_dim(dims[i], rank);
        if (d < 0) return a.fail("reduction dim out of range", Error::InvalidArgument);
        if (rank == 0) continue;
        if (reduce[d]) return a.fail("reduction dim repeated", Error::InvalidArgument);
        reduce[d] = true;
      }
    }
    int64_t strides[kMaxRank];
    contiguous_strides(in.sizes, rank, strides);
    out_shape = Shape();
    n_kept = n_red = 0;
    out_numel = reduce_numel = 1;
    for (int d = 0; d < rank; ++d) {
      if (reduce[d]) {
        if (keepdim) out_shape.push(1);
        reduce_numel *= in.sizes[d];
        append(red_sizes, red_strides, n_red, in.sizes[d], strides[d]);
      } else {
        out_shape.push(in.sizes[d]);
        out_numel *= in.sizes[d];
        append(kept_sizes, kept_strides, n_kept, in.sizes[d], strides[d]);
      }
    }
    return true;
  }

  // Input offset of the first reduced element of output element `o`.
  int64_t base(int64_t o) const {
    int64_t off = 0;
    for (int d = n_kept - 1; d >= 0; --d) {
      off += (o % kept_sizes[d]) * kept_strides[d];
      o /= kept_sizes[d];
    }
    return off;
  }

  // Calls f(offset) for each reduced element, in row-major order of the reduced dims.
  template <typename F>
  void for_each_reduced(int64_t base_offset, const F& f) const {
    if (reduce_numel == 0) return;
    if (n_red == 0) {
      f(base_offset);
      return;
    }
    if (n_red == 1) {
      for (int64_t i = 0; i < red_sizes[0]; ++i) f(base_offset + i * red_strides[0]);
      return;
    }
    int64_t idx[kMaxRank] = {};
    const int last = n_red - 1;
    int64_t off = base_offset;
    while (true) {
      for (int64_t i = 0; i < red_sizes[last]; ++i) f(off + i * red_strides[last]);
      int d = last - 1;
      for (; d >= 0; --d) {
        ++idx[d];
        off += red_strides[d];
        if (idx[d] < red_sizes[d]) break;
        off -= idx[d] * red_strides[d];
        idx[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  // Appends a dim, merging it into the previous one when they are contiguous together.
  static void append(int64_t* sizes, int64_t* strides, int& n, int64_t size, int64_t stride) {
    if (size == 1) return;
    if (n > 0 && strides[n - 1] == stride * size) {
      sizes[n - 1] *= size;
      strides[n - 1] = stride;
      return;
    }
    sizes[n] = size;
    strides[n] = stride;
    ++n;
  }
};

// Dims argument of a reduction: an int list, a single int, or None (all dims).
inline Span<const int64_t> reduction_dims(KernelArgs& a, size_t i, bool* all) {
  *all = a.is_none(i);
  if (*all) return Span<const int64_t>();
  Span<const int64_t> dims = a.int_list(i);
  if (dims.size() == 0) *all = true;
  return dims;
}

// Runs f(o) for each output index of the plan, in parallel chunks when large.
template <typename F>
void for_each_output(KernelContext& ctx, const ReducePlan& p, const F& f) {
  int64_t grain = p.reduce_numel > 0 ? kElementwiseGrain / p.reduce_numel : kElementwiseGrain;
  parallel_for_range(ctx, p.out_numel, grain < 1 ? 1 : grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) f(o);
  });
}

}  // namespace portable
}  // namespace ember
