#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Element-wise activations.
layout(constant_id = 1) const int OP = 0;  // schema UnaryOp
layout(constant_id = 2) const float MINV = 0.0;
layout(constant_id = 3) const float MAXV = 0.0;
layout(push_constant) uniform Params { int numel; } p;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { FLOAT_T y[]; };
#include "activations.glsl"
// GLSL pow() is undefined for x < 0; small integer exponents (x*x in RMSNorm) multiply.
float power(float v, float e) {
  if (e == floor(e) && abs(e) <= 16.0) {
    float r = 1.0;
    for (int i = 0; i < int(abs(e)); ++i) r *= v;
    return e < 0.0 ? 1.0 / r : r;
  }
  return v < 0.0 ? uintBitsToFloat(0x7fc00000u) : pow(v, e);  // NaN, as PyTorch gives
}
void main() {
  uint id = linear_id();
  if (id >= uint(p.numel)) return;
  float v = float(x[id]);
  float r;
  if (OP == 0) r = max(v, 0.0);
  else if (OP == 1 || OP == 2) r = min(max(v, MINV), MAXV);
  else if (OP == 3) r = v * min(max(v + 3.0, 0.0), 6.0) / 6.0;
  else if (OP == 4) r = sigmoid(v);
  else if (OP == 5) r = silu(v);
  else if (OP == 6) r = gelu(v);
  else if (OP == 7) r = gelu_tanh(v);
  else if (OP == 8) r = tanh_safe(v);
  else if (OP == 9) r = v * MINV + MAXV;
  else if (OP == 10) r = inversesqrt(v);
  else if (OP == 11) r = power(v, MINV);
  else if (OP == 12) r = sqrt(v);
  else if (OP == 13) r = exp(v);
  else r = min(max(v + 3.0, 0.0), 6.0) / 6.0;
  y[id] = FLOAT_T(r);
}
