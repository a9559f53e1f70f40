#include "delegates/vulkan/vulkan_fp16.h"

#include "runtime/core/float16.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_FP16_F16C 1
#endif

namespace ember {
namespace vulkan {

// The one binary16 conversion of the runtime (runtime/core/float16.h), round to nearest even.
uint16_t float_to_half(float f) { return ::ember::float_to_half(f); }

float half_to_float(uint16_t h) { return ::ember::half_to_float(h); }

namespace {

#if defined(EMBER_FP16_F16C)
// F16C converts 8 values per instruction with the same rounding (nearest even), subnormals,
// infinities and quiet NaNs as the scalar code: an fp16 program's input (ImageNet's 150,528
// values) took ~1.2 ms through the scalar loop on the H200 host, as long as the whole GPU run.
__attribute__((target("avx,f16c"))) void floats_to_halves_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = ::ember::float_to_half(src[i]);
}

__attribute__((target("avx,f16c"))) void halves_to_floats_f16c(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = ::ember::half_to_float(src[i]);
}

bool cpu_has_f16c() {
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
}
#endif

}  // namespace

void floats_to_halves(const float* src, uint16_t* dst, size_t n) {
#if defined(EMBER_FP16_F16C)
  if (cpu_has_f16c()) return floats_to_halves_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = ::ember::float_to_half(src[i]);
}

void halves_to_floats(const uint16_t* src, float* dst, size_t n) {
#if defined(EMBER_FP16_F16C)
  if (cpu_has_f16c()) return halves_to_floats_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = ::ember::half_to_float(src[i]);
}

}  // namespace vulkan
}  // namespace ember
