#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// (log_)softmax over the middle dim of an (OUTER, D, INNER) view; one invocation per row.
layout(constant_id = 1) const int OUTER = 1;
layout(constant_id = 2) const int D = 1;
layout(constant_id = 3) const int INNER = 1;
layout(constant_id = 4) const int LOG = 0;
// COOP = 1 (lines of >= 64 values): one 64-invocation workgroup per line, strided loads and
// shared-memory max/sum reductions; else one invocation per line.
layout(constant_id = 5) const int COOP = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { FLOAT_T y[]; };
shared float red[64];
float wg_reduce(float v, bool take_max) {
  uint lid = gl_LocalInvocationIndex;
  red[lid] = v;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] = take_max ? max(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void coop() {
  uint line = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (line >= uint(OUTER * INNER)) return;  // whole workgroup: no barrier is skipped
  int o = int(line) / INNER;
  int i = int(line) % INNER;
  int base = o * D * INNER + i;
  int lid = int(gl_LocalInvocationIndex);
  float m = uintBitsToFloat(0xff800000u);
  for (int d = lid; d < D; d += 64) m = max(m, float(x[base + d * INNER]));
  m = wg_reduce(m, true);
  float s = 0.0;
  for (int d = lid; d < D; d += 64) s += exp(float(x[base + d * INNER]) - m);
  s = wg_reduce(s, false);
  if (LOG != 0) {
    float ls = log(s);
    for (int d = lid; d < D; d += 64) y[base + d * INNER] = FLOAT_T(float(x[base + d * INNER]) - m - ls);
  } else {
    float inv = 1.0 / s;
    for (int d = lid; d < D; d += 64) y[base + d * INNER] = FLOAT_T(exp(float(x[base + d * INNER]) - m) * inv);
  }
}

void main() {
  if (COOP != 0) {
    coop();
    return;
  }
  uint id = linear_id();
  if (id >= uint(OUTER * INNER)) return;
  int o = int(id) / INNER;
  int i = int(id) % INNER;
  int base = o * D * INNER + i;
  float m = uintBitsToFloat(0xff800000u);
  for (int d = 0; d < D; ++d) m = max(m, float(x[base + d * INNER]));
  float s = 0.0;
  for (int d = 0; d < D; ++d) s += exp(float(x[base + d * INNER]) - m);
  if (LOG != 0) {
    float ls = log(s);
    for (int d = 0; d < D; ++d) y[base + d * INNER] = FLOAT_T(float(x[base + d * INNER]) - m - ls);
  } else {
    float inv = 1.0 / s;
    for (int d = 0; d < D; ++d) y[base + d * INNER] = FLOAT_T(exp(float(x[base + d * INNER]) - m) * inv);
  }
}
