// Broadcasting elementwise loops.
//
// map_elementwise<C, R>(ctx, {a, b, ...}, out, f) writes out[i] = f(a[i'], b[i''], ...) over
// the broadcast of the inputs (out must already have the broadcast shape), loading each
// input as compute type C and storing f's result (type R) as out's dtype. Paths:
//  - every tensor in its native dtype (C's storage type), same shape: a flat loop over
//    restrict pointers the compiler vectorises;
//  - native dtypes, broadcast: strided typed loop over coalesced dimensions;
//  - anything else: per-element dtype conversion.
// Large outputs are split into chunks run on the context's thread pool.
#pragma once

#include <cstdint>
#include <utility>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {

template <typename C> struct NativeDtype;
template <> struct NativeDtype<float> { static constexpr ScalarType value = ScalarType::Float32; };
template <> struct NativeDtype<double> { static constexpr ScalarType value = ScalarType::Float64; };
template <> struct NativeDtype<int64_t> { static constexpr ScalarType value = ScalarType::Int64; };
template <> struct NativeDtype<bool> { static constexpr ScalarType value = ScalarType::Bool; };

// Iteration plan: output dims with each operand's element strides (0 where broadcast),
// size-1 dims dropped and mergeable neighbours coalesced. Operand N is the output.
template <int N>
struct BroadcastPlan {
  int rank = 0;
  int64_t sizes[kMaxRank] = {};
  int64_t strides[N + 1][kMaxRank] = {};

  void init(const Tensor* const* ins, const Tensor& out) {
    int out_rank = out.rank;
    int64_t full[N + 1][kMaxRank];
    int64_t out_strides[kMaxRank];
    contiguous_strides(out.sizes, out_rank, out_strides);
    for (int k = 0; k < N; ++k) {
      const Tensor& t = *ins[k];
      int64_t ts[kMaxRank];
      contiguous_strides(t.sizes, t.rank, ts);
      for (int d = 0; d < out_rank; ++d) {
        int td = d - (out_rank - t.rank);
        full[k][d] = (td < 0 || t.sizes[td] == 1) ? 0 : ts[td];
      }
    }
    for (int d = 0; d < out_rank; ++d) full[N][d] = out_strides[d];
    rank = 0;
    for (int d = 0; d < out_rank; ++d) {
      if (out.sizes[d] == 1) continue;
      if (rank > 0) {
        bool merge = true;
        for (int k = 0; k <= N; ++k) {
          if (strides[k][rank - 1] != full[k][d] * out.sizes[d]) merge = false;
        }
        if (merge) {
          sizes[rank - 1] *= out.sizes[d];
          for (int k = 0; k <= N; ++k) strides[k][rank - 1] = full[k][d];
          continue;
        }
      }
      sizes[rank] = out.sizes[d];
      for (int k = 0; k <= N; ++k) strides[k][rank] = full[k][d];
      ++rank;
    }
  }

  // Calls run(offsets[N + 1], inner_strides[N + 1], count) for each innermost run of the
  // output elements [begin, end).
  template <typename Run>
  void for_runs(int64_t begin, int64_t end, const Run& run) const {
    int64_t off[N + 1] = {};
    int64_t inner[N + 1] = {};
    if (rank == 0) {
      if (begin < end) run(off, inner, end - begin);
      return;
    }
    int64_t idx[kMaxRank];
    int64_t rem = begin;
    for (int d = rank - 1; d >= 0; --d) {
      idx[d] = rem % sizes[d];
      rem /= sizes[d];
      for (int k = 0; k <= N; ++k) off[k] += idx[d] * strides[k][d];
    }
    const int last = rank - 1;
    for (int k = 0; k <= N; ++k) inner[k] = strides[k][last];
    int64_t i = begin;
    while (i < end) {
      int64_t n = sizes[last] - idx[last];
      if (n > end - i) n = end - i;
      run(off, inner, n);
      i += n;
      if (i >= end) break;
      // Advance: the innermost dim wrapped; carry into outer dims.
      for (int k = 0; k <= N; ++k) off[k] -= idx[last] * strides[k][last];
      idx[last] = 0;
      for (int d = last - 1; d >= 0; --d) {
        ++idx[d];
        for (int k = 0; k <= N; ++k) off[k] += strides[k][d];
        if (idx[d] < sizes[d]) break;
        for (int k = 0; k <= N; ++k) off[k] -= idx[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  }
};

namespace detail {

template <typename C, int N, typename F, size_t... I>
inline auto apply_loaded(const F& f, const C* v, std::index_sequence<I...>) {
  return f(v[I]...);
}

template <typename C, typename R, int N, bool kNative, typename F>
void run_strided(const BroadcastPlan<N>& plan, const Tensor* const* ins, Tensor& out,
                 int64_t begin, int64_t end, const F& f) {
  const void* data[N];
  ScalarType types[N];
  for (int k = 0; k < N; ++k) {
    data[k] = ins[k]->data;
    types[k] = ins[k]->dtype;
  }
  void* odata = out.data;
  ScalarType otype = out.dtype;
  plan.for_runs(begin, end, [&](const int64_t* off, const int64_t* inner, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      C v[N];
      for (int k = 0; k < N; ++k) {
        int64_t e = off[k] + j * inner[k];
        if constexpr (kNative) {
          v[k] = static_cast<const C*>(data[k])[e];
        } else {
          v[k] = load_as<C>(data[k], types[k], e);
        }
      }
      R r = apply_loaded<C, N>(f, v, std::make_index_sequence<N>());
      int64_t o = off[N] + j * inner[N];
      if constexpr (kNative) {
        static_cast<R*>(odata)[o] = r;
      } else {
        store_as<R>(odata, otype, o, r);
      }
    }
  });
}

template <typename C, typename R, typename F>
void run_flat(const C* __restrict a, R* __restrict o, int64_t begin, int64_t end, const F& f) {
  for (int64_t i = begin; i < end; ++i) o[i] = f(a[i]);
}
template <typename C, typename R, typename F>
void run_flat(const C* __restrict a, const C* __restrict b, R* __restrict o, int64_t begin,
              int64_t end, const F& f) {
  for (int64_t i = begin; i < end; ++i) o[i] = f(a[i], b[i]);
}
// Output may alias an input for in-place ops; the flat loops read element i before writing
// it, so aliasing of the same element is fine. The restrict qualifiers are only applied
// when the buffers differ.
template <typename C, typename R, typename F>
void run_flat_alias(const C* a, R* o, int64_t begin, int64_t end, const F& f) {
  for (int64_t i = begin; i < end; ++i) o[i] = f(a[i]);
}
template <typename C, typename R, typename F>
void run_flat_alias(const C* a, const C* b, R* o, int64_t begin, int64_t end, const F& f) {
  for (int64_t i = begin; i < end; ++i) o[i] = f(a[i], b[i]);
}

}  // namespace detail

// out = f(ins...) elementwise with broadcasting. `out` must already be resized to the
// broadcast shape of the inputs and be contiguous (see resize_to).
template <typename C, typename R, int N, typename F>
void map_elementwise(KernelContext& ctx, const Tensor* const (&ins)[N], Tensor& out, const F& f) {
  const int64_t total = out.numel();
  if (total == 0) return;
  bool native = out.dtype == NativeDtype<R>::value;
  bool same_shape = true;
  for (int k = 0; k < N; ++k) {
    if (ins[k]->dtype != NativeDtype<C>::value) native = false;
    if (ins[k]->numel() != total) same_shape = false;
  }
  if (native && same_shape && (N == 1 || N == 2)) {
    const C* a = static_cast<const C*>(ins[0]->data);
    const C* b = static_cast<const C*>(ins[N - 1]->data);
    R* o = static_cast<R*>(out.data);
    bool alias = static_cast<const void*>(a) == static_cast<const void*>(o) ||
                 static_cast<const void*>(b) == static_cast<const void*>(o);
    parallel_for_range(ctx, total, kElementwiseGrain, [&](int64_t begin, int64_t end) {
      if constexpr (N == 1) {
        if (alias) detail::run_flat_alias<C, R>(a, o, begin, end, f);
        else detail::run_flat<C, R>(a, o, begin, end, f);
      } else if constexpr (N == 2) {
        if (alias) detail::run_flat_alias<C, R>(a, b, o, begin, end, f);
        else detail::run_flat<C, R>(a, b, o, begin, end, f);
      }
    });
    return;
  }
  BroadcastPlan<N> plan;
  plan.init(ins, out);
  parallel_for_range(ctx, total, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (native) {
      detail::run_strided<C, R, N, true>(plan, ins, out, begin, end, f);
    } else {
      detail::run_strided<C, R, N, false>(plan, ins, out, begin, end, f);
    }
  });
}

// Shape of the broadcast of `n` tensors; false when incompatible.
inline bool broadcast_all(const Tensor* const* ts, int n, Shape& out) {
  out = Shape();
  for (int i = 0; i < n; ++i) {
    if (ts[i] == nullptr) continue;
    Shape next;
    if (!broadcast_shapes(out, Shape(*ts[i]), next)) return false;
    out = next;
  }
  return true;
}

// Resizes `out` to the broadcast of `ins`, records an error when they do not broadcast.
template <int N>
bool resize_broadcast(KernelArgs& a, const Tensor* const (&ins)[N], Tensor* out) {
  if (!a.ok()) return false;
  for (int k = 0; k < N; ++k) {
    if (!require_contiguous(a, ins[k])) return false;
  }
  Shape s;
  if (!broadcast_all(ins, N, s)) return a.fail("tensor shapes do not broadcast");
  return resize_to(a, out, s);
}

}  // namespace portable
}  // namespace ember
