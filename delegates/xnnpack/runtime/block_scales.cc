#include "delegates/xnnpack/runtime/block_scales.h"

namespace ember {
namespace xnnpack {

namespace {

// A positive normal bfloat16: sign 0 and an exponent field in 1..254.
inline uint32_t is_bad(uint32_t bits) {
  const uint32_t exponent = (bits >> 7) & 0xFFu;
  return (bits >> 15) | static_cast<uint32_t>(exponent == 0) | static_cast<uint32_t>(exponent == 0xFFu);
}

}  // namespace

size_t first_bad_block_scale(const uint16_t* scales, size_t count) {
  uint32_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad |= is_bad(scales[i]);  // vectorised
  if (bad == 0) return count;
  for (size_t i = 0; i < count; ++i) {
    if (is_bad(scales[i]) != 0) return i;
  }
  return count;
}

}  // namespace xnnpack
}  // namespace ember
