// Exact integer dot products for the quantized kernels: sum(a[i] * b[i]) of int16 values
// (activations minus their zero point, |a| <= 255) and int8 weights, in int32. SSE2's pmaddwd
// on x86-64 (part of the baseline: no dispatch needed), NEON's vmlal on Arm64, a scalar loop
// elsewhere; the same sums everywhere (integer arithmetic, no reassociation error).
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#elif defined(__ARM_NEON) && defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace ember {
namespace portable {

inline int32_t dot_int16_int8(const int16_t* a, const int8_t* b, int64_t k) {
  int32_t sum = 0;
  int64_t i = 0;
#if defined(__SSE2__)
  __m128i acc = _mm_setzero_si128();
  for (; i + 8 <= k; i += 8) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i w8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + i));
    const __m128i w = _mm_srai_epi16(_mm_unpacklo_epi8(w8, w8), 8);  // sign-extend to int16
    acc = _mm_add_epi32(acc, _mm_madd_epi16(x, w));  // pairs of products: |.| < 2^16 each
  }
  int32_t lanes[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), acc);
  sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
#elif defined(__ARM_NEON) && defined(__aarch64__)
  int32x4_t acc = vdupq_n_s32(0);
  for (; i + 8 <= k; i += 8) {
    const int16x8_t x = vld1q_s16(a + i);
    const int16x8_t w = vmovl_s8(vld1_s8(b + i));
    acc = vmlal_s16(acc, vget_low_s16(x), vget_low_s16(w));
    acc = vmlal_high_s16(acc, x, w);
  }
  sum = vaddvq_s32(acc);
#endif
  for (; i < k; ++i) sum += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return sum;
}

}  // namespace portable
}  // namespace ember
