#include "delegates/vulkan/vulkan_fp16.h"

#include "runtime/core/float16.h"

namespace ember {
namespace vulkan {

// The one binary16 conversion of the runtime (runtime/core/float16.h), round to nearest even.
uint16_t float_to_half(float f) { return ::ember::float_to_half(f); }

float half_to_float(uint16_t h) { return ::ember::half_to_float(h); }

void floats_to_halves(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = ::ember::float_to_half(src[i]);
}

void halves_to_floats(const uint16_t* src, float* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = ::ember::half_to_float(src[i]);
}

}  // namespace vulkan
}  // namespace ember
