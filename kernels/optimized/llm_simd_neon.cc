// The NEON table (Arm64, where Advanced SIMD is part of the base architecture: no run-time
// check needed).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/optimized/llm_simd.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#include "kernels/optimized/llm_simd_body.h"

namespace ember {
namespace optimized {
namespace {

struct NeonOps {
  using V = float32x4_t;
  static constexpr int64_t W = 4;
  static V zero() { return vdupq_n_f32(0.0f); }
  static V set1(float x) { return vdupq_n_f32(x); }
  static V load(const float* p) { return vld1q_f32(p); }
  static void store(float* p, V v) { vst1q_f32(p, v); }
  static V add(V a, V b) { return vaddq_f32(a, b); }
  static V mul(V a, V b) { return vmulq_f32(a, b); }
  static V div(V a, V b) { return vdivq_f32(a, b); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static V max(V a, V b) { return vmaxq_f32(a, b); }
  static V min(V a, V b) { return vminq_f32(a, b); }
  static V round(V a) { return vrndnq_f32(a); }
  static V pow2i(V n) {
    const int32x4_t e = vaddq_s32(vcvtnq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static float sum(V a) { return vaddvq_f32(a); }
  static float hmax(V a) { return vmaxvq_f32(a); }
};

}  // namespace

const LlmMath* llm_math_neon() { return make_table<NeonOps>(LlmIsa::Neon, "neon"); }

}  // namespace optimized
}  // namespace ember

#else
namespace ember {
namespace optimized {
const LlmMath* llm_math_neon() { return nullptr; }
}  // namespace optimized
}  // namespace ember
#endif
