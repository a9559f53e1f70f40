#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Weight-only quantized rows: out[i, d] = q[indices[i]][d] * scales[indices[i]][d / GROUP];
// q int8 [V, D] (BITS 8) or [V, D / 2] (BITS 4: value + 8, low nibble first), read as 32-bit
// words (D a multiple of 4 or 8, so rows start on a word). Indices int32 or int64 (low word);
// one out of range gives a zero row, as embedding.comp does.
layout(constant_id = 1) const int NIDX = 1;
layout(constant_id = 2) const int D = 4;
layout(constant_id = 3) const int V = 1;
layout(constant_id = 4) const int IDX64 = 1;
layout(constant_id = 5) const int BITS = 8;
layout(constant_id = 6) const int GROUP = 4;
layout(std430, set = 0, binding = 0) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer I { int ind[]; };
layout(std430, set = 0, binding = 2) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(NIDX * D)) return;
  int i = int(id) / D;
  int d = int(id) % D;
  int row = IDX64 != 0 ? ind[2 * i] : ind[i];
  if (IDX64 != 0 && ind[2 * i + 1] != (row < 0 ? -1 : 0)) row = -1;
  if (row < 0) row += V;
  float v = 0.0;
  if (row >= 0 && row < V) {
    int e = row * D + d;  // element index in the quantized matrix
    float q = BITS == 8 ? float(bitfieldExtract(int(wq[e / 4]), 8 * (e % 4), 8))
                        : float(int(bitfieldExtract(wq[e / 8], 4 * (e % 8), 4)) - 8);
    v = q * float(scales[row * (D / GROUP) + d / GROUP]);
  }
  y[id] = FLOAT_T(v);
}
