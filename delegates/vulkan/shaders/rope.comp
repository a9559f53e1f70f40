#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
#include "rotate_half.glsl"
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Rotary embedding, rotate-half form, over x [..., T, D]:
//   y = x * cos[t] + cat(-x[..., D/2:], x[..., :D/2]) * sin[t]   (cos/sin rows [TC, D], TC = T or 1)
// HEADS > 0: y is [B, HEADS, T, D] and x is stored token-major, [B, T, HEADS, D] (a transpose
// folded into this dispatch, runtime/dispatch_fusion.h).
layout(constant_id = 1) const int NUMEL = 1;
layout(constant_id = 2) const int T = 1;
layout(constant_id = 3) const int D = 2;
layout(constant_id = 4) const int TC = 1;
layout(constant_id = 5) const int HEADS = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer C { FLOAT_T c[]; };
layout(std430, set = 0, binding = 2) readonly buffer S { FLOAT_T s[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(NUMEL)) return;
  int i = int(id);
  int d = i % D;
  int t = (i / D) % T;
  int row = TC == 1 ? 0 : t;
  int half_d = D / 2;
  int at = i;  // x's element of y[i]
  if (HEADS > 0) {
    int bh = i / (D * T);
    at = ((bh / HEADS * T + t) * HEADS + bh % HEADS) * D + d;
  }
  const bool first = d < half_d;
  const float partner = float(x[first ? at + half_d : at - half_d]);
  y[i] = FLOAT_T(rotate_half(float(x[at]), partner, first, float(c[row * D + d]), float(s[row * D + d])));
}
