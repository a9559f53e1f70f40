// The AVX2 + FMA table (x86-64). Every function below the pragma, including the template
// instantiations of llm_simd_body.h, is compiled for avx2,fma; llm_simd.cc calls it only
// when __builtin_cpu_supports says the CPU has both.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/optimized/llm_simd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "kernels/optimized/llm_simd_body.h"

namespace ember {
namespace optimized {
namespace {

struct Avx2Ops {
  using V = __m256;
  static constexpr int64_t W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V round(V a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2i(V n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static __m128 half_sum(V a) { return _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1)); }
  static float sum(V a) {
    __m128 s = half_sum(a);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float hmax(V a) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
  }
};

}  // namespace

const LlmMath* llm_math_avx2() { return make_table<Avx2Ops>(LlmIsa::Avx2, "avx2"); }

}  // namespace optimized
}  // namespace ember
#pragma GCC pop_options

#else
namespace ember {
namespace optimized {
const LlmMath* llm_math_avx2() { return nullptr; }
}  // namespace optimized
}  // namespace ember
#endif
