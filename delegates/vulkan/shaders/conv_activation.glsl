// A convolution's, GEMM's or matmul's fused activation (spec constants ACT, ACT_MIN, ACT_MAX of the
// including shader): 0 none, 1 clamp to [ACT_MIN, ACT_MAX] (relu, relu6, hardtanh), 2 silu,
// 3 sigmoid, 4 gelu, 5 gelu (tanh approximation); unary.comp's formulas (activations.glsl).
#include "activations.glsl"
float activation(float v) {
  if (ACT == 1) return min(max(v, ACT_MIN), ACT_MAX);
  if (ACT == 2) return silu(v);
  if (ACT == 3) return sigmoid(v);
  if (ACT == 4) return gelu(v);
  if (ACT == 5) return gelu_tanh(v);
  return v;
}
