#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// out[i, :] = weight[indices[i], :]; indices int32 or int64 (low word, little-endian).
layout(constant_id = 1) const int NIDX = 1;
layout(constant_id = 2) const int D = 1;
layout(constant_id = 3) const int V = 1;
layout(constant_id = 4) const int IDX64 = 1;
layout(std430, set = 0, binding = 0) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 1) readonly buffer I { int ind[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(NIDX * D)) return;
  int i = int(id) / D;
  int d = int(id) % D;
  int row = IDX64 != 0 ? ind[2 * i] : ind[i];
  if (IDX64 != 0 && ind[2 * i + 1] != (row < 0 ? -1 : 0)) row = -1;
  if (row < 0) row += V;
  y[id] = FLOAT_T((row >= 0 && row < V) ? float(w[row * D + d]) : 0.0);
}
