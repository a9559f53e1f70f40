// IEEE binary16 <-> binary32 conversion shared by the Vulkan exporter (fp16 weights) and the
// runtime (fp16 storage, runtime/fp16_storage.h). No Vulkan dependency; no allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
namespace vulkan {

// Rounds to nearest even; overflows to +-inf; a NaN stays a (quiet) NaN; tiny values become
// subnormals or signed zero.
uint16_t float_to_half(float f);
// Exact.
float half_to_float(uint16_t h);
// Element-wise over n values (src and dst must not overlap).
void floats_to_halves(const float* src, uint16_t* dst, size_t n);
void halves_to_floats(const uint16_t* src, float* dst, size_t n);

}  // namespace vulkan
}  // namespace ember
