// The arithmetic every quantized kernel shares: the representable range of a quantized dtype
// and PyTorch's quantization of an already scaled value (x * float(1 / scale)): round half to
// even, add the zero point, clamp. A NaN becomes the zero point before the clamp, so no input
// reaches an undefined float-to-int conversion.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "runtime/core/scalar_type.h"

namespace ember {
namespace portable {

// Representable range of a quantized dtype (uint8, int8, int16, int32); false for others.
inline bool quantized_range(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::UInt8: *lo = 0; *hi = 255; return true;
    case ScalarType::Int8: *lo = -128; *hi = 127; return true;
    case ScalarType::Int16: *lo = -32768; *hi = 32767; return true;
    case ScalarType::Int32: *lo = std::numeric_limits<int32_t>::min(); *hi = std::numeric_limits<int32_t>::max(); return true;
    default: return false;
  }
}

// clamp(round_half_even(scaled) + zero_point, lo, hi) as Q; [lo, hi] must lie in Q's range.
template <typename Q>
inline Q quantize_scaled(float scaled, float zero_point, float lo, float hi) {
  float v = std::nearbyint(scaled) + zero_point;  // round half to even, as torch.round
  if (std::isnan(v)) v = zero_point;
  v = v < lo ? lo : (v > hi ? hi : v);
  return static_cast<Q>(v);
}

}  // namespace portable
}  // namespace ember
