// The checks every convolution (float and quantized) makes of one spatial dimension's stride,
// dilation and padding before any geometry is computed from them.
#pragma once

#include <cstdint>

namespace ember {
namespace portable {

// nullptr when one spatial dim's parameters are valid, else why not. They are multiplied with
// sizes (< 2^40) in the geometry, so each is bounded below 2^31 too (fuzzers found int64
// overflows with a huge dilation, and with a quantized convolution's padding of 6e18).
inline const char* window_param_error(int64_t stride, int64_t dilation, int64_t pad, int64_t pad_end,
                                      int64_t output_padding) {
  if (stride < 1 || dilation < 1 || pad < 0 || pad_end < 0 || output_padding < 0) {
    return "stride and dilation must be >= 1, padding (and output padding) >= 0";
  }
  constexpr int64_t kLimit = int64_t{1} << 31;
  if (stride >= kLimit || dilation >= kLimit || pad >= kLimit || pad_end >= kLimit || output_padding >= kLimit) {
    return "convolution stride, padding and dilation must be below 2^31";
  }
  return nullptr;
}

}  // namespace portable
}  // namespace ember
