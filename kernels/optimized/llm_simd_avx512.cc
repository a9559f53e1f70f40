// The AVX-512F table (x86-64), 16 lanes; the CPU must also have AVX2 + FMA (checked by
// llm_simd.cc: every AVX-512 CPU has them).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/optimized/llm_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 at -O2 reports its own _mm512_undefined_*() self-initialisation inside
// avx512fintrin.h (used by cvtps_epi32, the reductions) as maybe-uninitialized: a false
// positive in the compiler's header, silenced for this file only.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#include "kernels/optimized/llm_simd_body.h"

namespace ember {
namespace optimized {
namespace {

struct Avx512Ops {
  using V = __m512;
  static constexpr int64_t W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V round(V a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static float sum(V a) { return _mm512_reduce_add_ps(a); }
  static float hmax(V a) { return _mm512_reduce_max_ps(a); }
};

}  // namespace

const LlmMath* llm_math_avx512() { return make_table<Avx512Ops>(LlmIsa::Avx512, "avx512"); }

}  // namespace optimized
}  // namespace ember
#pragma GCC pop_options

#else
namespace ember {
namespace optimized {
const LlmMath* llm_math_avx512() { return nullptr; }
}  // namespace optimized
}  // namespace ember
#endif
