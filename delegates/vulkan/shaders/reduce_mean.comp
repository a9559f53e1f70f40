#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Mean over the middle dim of an (OUTER, R, INNER) view.
layout(constant_id = 1) const int OUTER = 1;
layout(constant_id = 2) const int R = 1;
layout(constant_id = 3) const int INNER = 1;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(OUTER * INNER)) return;
  int o = int(id) / INNER;
  int i = int(id) % INNER;
  int base = o * R * INNER + i;
  float s = 0.0;
  for (int r = 0; r < R; ++r) s += float(x[base + r * INNER]);
  y[id] = FLOAT_T(s / float(R));
}
