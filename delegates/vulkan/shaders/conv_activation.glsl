// A convolution's, GEMM's or matmul's fused activation (spec constants ACT, ACT_MIN, ACT_MAX of the
// including shader): 0 none, 1 clamp to [ACT_MIN, ACT_MAX] (relu, relu6, hardtanh), 2 silu,
// 3 sigmoid, 4 gelu, 5 gelu (tanh approximation); unary.comp's formulas (activations.glsl).
#include "activations.glsl"
// The same for any (code, bounds): a shader with a second activation (mlp2.comp's hidden one).
float activation_of(int act, float lo, float hi, float v) {
  if (act == 1) return min(max(v, lo), hi);
  if (act == 2) return silu(v);
  if (act == 3) return sigmoid(v);
  if (act == 4) return gelu(v);
  if (act == 5) return gelu_tanh(v);
  return v;
}
float activation(float v) { return activation_of(ACT, ACT_MIN, ACT_MAX, v); }
