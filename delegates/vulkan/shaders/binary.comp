#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// out = a OP b with broadcasting: per-dim element strides of a and b (0 where broadcast).
layout(constant_id = 1) const int OP = 0;  // 0 add, 1 sub, 2 mul, 3 div, 4 silu(a) * b
layout(constant_id = 2) const float ALPHA = 1.0;
layout(push_constant) uniform Params {
  int rank; int numel; int pad0; int pad1;
  int sizes[8]; int sa[8]; int sb[8];
} p;
layout(std430, set = 0, binding = 0) readonly buffer A { FLOAT_T a[]; };
layout(std430, set = 0, binding = 1) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(p.numel)) return;
  int rem = int(id);
  int ia = 0, ib = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    int i = rem % p.sizes[d];
    rem /= p.sizes[d];
    ia += i * p.sa[d];
    ib += i * p.sb[d];
  }
  float va = float(a[ia]), vb = float(b[ib]);
  float r;
  if (OP == 0) r = va + ALPHA * vb;
  else if (OP == 1) r = va - ALPHA * vb;
  else if (OP == 2) r = va * vb;
  else if (OP == 3) r = va / vb;
  else r = va / (1.0 + exp(-va)) * vb;
  y[id] = FLOAT_T(r);
}
