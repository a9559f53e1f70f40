// Layout conversion between Ember's NCHW tensors and XNNPACK's NHWC activations, done once
// at a partition's entry and exit (this XNNPACK version has no transpose node).
//
// Both directions are a per-image 2D transpose ([C][HW] <-> [HW][C]) done in cache-sized
// tiles, spread over `pool` when it is non-null. No allocation.
#pragma once

#include <cstddef>
#include <cstdint>

struct pthreadpool;

namespace ember {
namespace xnnpack {

// dst[n][hw][c] = src[n][c][hw]
void nchw_to_nhwc(const float* src, float* dst, size_t n, size_t c, size_t hw, pthreadpool* pool);
// dst[n][c][hw] = src[n][hw][c]
void nhwc_to_nchw(const float* src, float* dst, size_t n, size_t c, size_t hw, pthreadpool* pool);
// The same for int8 tensors (QInt8 delegate inputs/outputs of quantized programs).
void nchw_to_nhwc(const int8_t* src, int8_t* dst, size_t n, size_t c, size_t hw, pthreadpool* pool);
void nhwc_to_nchw(const int8_t* src, int8_t* dst, size_t n, size_t c, size_t hw, pthreadpool* pool);

}  // namespace xnnpack
}  // namespace ember
