// A convolution's, GEMM's or matmul's fused activation (spec constants ACT, ACT_MIN, ACT_MAX of the
// including shader): 0 none, 1 clamp to [ACT_MIN, ACT_MAX] (relu, relu6, hardtanh), 2 silu,
// 3 sigmoid, 4 gelu, 5 gelu (tanh approximation); unary.comp's formulas (activations.glsl).
#include "activations.glsl"
// Activation `kind` (the codes above) with clamp bounds lo, hi.
float activation_of(int kind, float v, float lo, float hi) {
  if (kind == 1) return min(max(v, lo), hi);
  if (kind == 2) return silu(v);
  if (kind == 3) return sigmoid(v);
  if (kind == 4) return gelu(v);
  if (kind == 5) return gelu_tanh(v);
  return v;
}
float activation(float v) { return activation_of(ACT, v, ACT_MIN, ACT_MAX); }
