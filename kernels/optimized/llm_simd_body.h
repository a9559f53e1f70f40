// The row routines of llm_simd.h, written once over a vector type `I` (see ScalarOps below for
// the members a vector type provides) and compiled once per instruction set.
//
// Include this header last, after `#pragma GCC target(...)` and after every other header, in
// exactly one .cc per instruction set: everything here has internal linkage, so each
// translation unit keeps its own copy compiled for its own target (no inline function with
// external linkage may be compiled for AVX2 and then picked by the linker for the scalar path).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/optimized/llm_simd.h"

namespace ember {
namespace optimized {
namespace {

// One-lane "vector": the fallback, and the tail of every SIMD loop.
struct ScalarOps {
  using V = float;
  static constexpr int64_t W = 1;
  static V zero() { return 0.0f; }
  static V set1(float x) { return x; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V round(V a) { return std::nearbyint(a); }
  // 2^n for an integral n in [-126, 127], built in the exponent bits.
  static V pow2i(V n) {
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  static float sum(V a) { return a; }
  static float hmax(V a) { return a; }
};

// exp(x) for every lane: x clamped to [-87, 88] (no infinities, no denormals), x = n ln2 + r
// with |r| <= ln2 / 2 (ln2 split in two so n ln2 is exact), exp(r) by its degree-6 Taylor
// polynomial (relative error < 1e-7 on that interval), times 2^n.
template <class I>
inline typename I::V vexp(typename I::V x) {
  using V = typename I::V;
  x = I::min(I::max(x, I::set1(-87.0f)), I::set1(88.0f));
  const V n = I::round(I::mul(x, I::set1(1.44269504088896341f)));
  V r = I::fma(n, I::set1(-0.693145751953125f), x);
  r = I::fma(n, I::set1(-1.42860682030941723e-6f), r);
  V p = I::set1(1.0f / 720.0f);
  p = I::fma(p, r, I::set1(1.0f / 120.0f));
  p = I::fma(p, r, I::set1(1.0f / 24.0f));
  p = I::fma(p, r, I::set1(1.0f / 6.0f));
  p = I::fma(p, r, I::set1(0.5f));
  p = I::fma(p, r, I::set1(1.0f));
  p = I::fma(p, r, I::set1(1.0f));
  return I::mul(p, I::pow2i(n));
}

template <class I>
inline float dot(const float* a, const float* b, int64_t n) {
  typename I::V acc0 = I::zero(), acc1 = I::zero();
  int64_t i = 0;
  for (; i + 2 * I::W <= n; i += 2 * I::W) {
    acc0 = I::fma(I::load(a + i), I::load(b + i), acc0);
    acc1 = I::fma(I::load(a + i + I::W), I::load(b + i + I::W), acc1);
  }
  for (; i + I::W <= n; i += I::W) acc0 = I::fma(I::load(a + i), I::load(b + i), acc0);
  float s = I::sum(I::add(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y += s * x
template <class I>
inline void axpy(float s, const float* x, float* y, int64_t n) {
  const typename I::V vs = I::set1(s);
  int64_t i = 0;
  for (; i + I::W <= n; i += I::W) I::store(y + i, I::fma(vs, I::load(x + i), I::load(y + i)));
  for (; i < n; ++i) y[i] += s * x[i];
}

template <class I>
inline void scale_in_place(float* y, float s, int64_t n) {
  const typename I::V vs = I::set1(s);
  int64_t i = 0;
  for (; i + I::W <= n; i += I::W) I::store(y + i, I::mul(I::load(y + i), vs));
  for (; i < n; ++i) y[i] *= s;
}

template <class I>
inline float max_of(const float* x, int64_t n) {
  float m = -INFINITY;
  int64_t i = 0;
  if (n >= I::W) {
    typename I::V vm = I::load(x);
    for (i = I::W; i + I::W <= n; i += I::W) vm = I::max(vm, I::load(x + i));
    m = I::hmax(vm);
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// x = exp(x - shift); returns the sum.
template <class I>
inline float exp_shift_sum(float* x, float shift, int64_t n) {
  const typename I::V vs = I::set1(shift);
  typename I::V acc = I::zero();
  int64_t i = 0;
  for (; i + I::W <= n; i += I::W) {
    const typename I::V e = vexp<I>(I::add(I::load(x + i), I::mul(vs, I::set1(-1.0f))));
    I::store(x + i, e);
    acc = I::add(acc, e);
  }
  float s = I::sum(acc);
  for (; i < n; ++i) {
    x[i] = vexp<ScalarOps>(x[i] - shift);
    s += x[i];
  }
  return s;
}

template <class I>
void attend(const AttentionBlock& b) {
  int64_t len[kMaxAttentionRows];
  int64_t lmax = 0;
  const int64_t tn = b.tn < kMaxAttentionRows ? b.tn : kMaxAttentionRows;  // callers never exceed it
  for (int64_t ti = 0; ti < tn; ++ti) {
    len[ti] = b.pos[b.t0 + ti] + 1;
    lmax = len[ti] > lmax ? len[ti] : lmax;
  }
  const int64_t D = b.D;
  auto q_row = [&](int64_t ti, int64_t r) { return b.q + ((b.head0 + r) * b.T + b.t0 + ti) * D; };
  auto out_row = [&](int64_t ti, int64_t r) { return b.out + ((b.head0 + r) * b.T + b.t0 + ti) * D; };
  auto score_row = [&](int64_t ti, int64_t r) { return b.scores + (ti * b.n_rep + r) * lmax; };
  // Scores: each cached key row is read once for every query row of the group.
  for (int64_t j = 0; j < lmax; ++j) {
    const float* k = b.k_cache + j * D;
    for (int64_t ti = 0; ti < tn; ++ti) {
      if (j >= len[ti]) continue;
      for (int64_t r = 0; r < b.n_rep; ++r) score_row(ti, r)[j] = dot<I>(q_row(ti, r), k, D) * b.scale;
    }
  }
  // Softmax over each row's own prefix (never empty: position >= 0 gives one key).
  for (int64_t ti = 0; ti < tn; ++ti) {
    for (int64_t r = 0; r < b.n_rep; ++r) {
      float* s = score_row(ti, r);
      const float m = max_of<I>(s, len[ti]);
      const float sum = exp_shift_sum<I>(s, m, len[ti]);
      scale_in_place<I>(s, 1.0f / sum, len[ti]);
      std::memset(out_row(ti, r), 0, sizeof(float) * static_cast<size_t>(D));
    }
  }
  // out = P V, again one pass over the cached value rows.
  for (int64_t j = 0; j < lmax; ++j) {
    const float* v = b.v_cache + j * D;
    for (int64_t ti = 0; ti < tn; ++ti) {
      if (j >= len[ti]) continue;
      for (int64_t r = 0; r < b.n_rep; ++r) axpy<I>(score_row(ti, r)[j], v, out_row(ti, r), D);
    }
  }
}

template <class I>
void rms_norm(const float* x, const float* weight, float eps, float* out, int64_t rows, int64_t n) {
  using V = typename I::V;
  for (int64_t row = 0; row < rows; ++row) {
    const float* xr = x + row * n;
    float* o = out + row * n;
    V acc = I::zero();
    int64_t i = 0;
    for (; i + I::W <= n; i += I::W) {
      const V v = I::load(xr + i);
      acc = I::fma(v, v, acc);
    }
    float ss = I::sum(acc);
    for (; i < n; ++i) ss += xr[i] * xr[i];
    // Same steps as the exported chain: mean, + eps, rsqrt, x * r, then * weight.
    const float r = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    const V vr = I::set1(r);
    for (i = 0; i + I::W <= n; i += I::W) {
      I::store(o + i, I::mul(I::mul(I::load(xr + i), vr), I::load(weight + i)));
    }
    for (; i < n; ++i) o[i] = xr[i] * r * weight[i];
  }
}

template <class I>
void rope(const float* x, const float* cos, const float* sin, int64_t cs_rows, float* out, int64_t rows,
          int64_t half) {
  using V = typename I::V;
  const int64_t d = 2 * half;
  for (int64_t row = 0; row < rows; ++row) {
    const float* lo = x + row * d;
    const float* hi = lo + half;
    const int64_t cr = (row % cs_rows) * d;
    const float* c = cos + cr;
    const float* s = sin + cr;
    float* o = out + row * d;
    int64_t i = 0;
    for (; i + I::W <= half; i += I::W) {
      const V xl = I::load(lo + i), xh = I::load(hi + i);
      // first half: x_lo cos - x_hi sin; second half: x_hi cos + x_lo sin
      I::store(o + i, I::fma(xl, I::load(c + i), I::mul(I::mul(xh, I::set1(-1.0f)), I::load(s + i))));
      I::store(o + half + i, I::fma(xh, I::load(c + half + i), I::mul(xl, I::load(s + half + i))));
    }
    for (; i < half; ++i) {
      o[i] = lo[i] * c[i] + (-hi[i]) * s[i];
      o[half + i] = hi[i] * c[half + i] + lo[i] * s[half + i];
    }
  }
}

template <class I>
void silu_mul(const float* a, const float* b, float* out, int64_t n) {
  using V = typename I::V;
  const V one = I::set1(1.0f), minus = I::set1(-1.0f);
  int64_t i = 0;
  for (; i + I::W <= n; i += I::W) {
    const V va = I::load(a + i);
    const V sig = I::div(one, I::add(one, vexp<I>(I::mul(va, minus))));
    I::store(out + i, I::mul(I::mul(va, sig), I::load(b + i)));
  }
  for (; i < n; ++i) out[i] = a[i] / (1.0f + vexp<ScalarOps>(-a[i])) * b[i];
}

template <class I>
const LlmMath* make_table(LlmIsa isa, const char* name) {
  static const LlmMath table = {isa, name, attend<I>, rms_norm<I>, rope<I>, silu_mul<I>};
  return &table;
}

}  // namespace
}  // namespace optimized
}  // namespace ember
