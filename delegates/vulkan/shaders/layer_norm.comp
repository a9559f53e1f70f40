#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Layer norm over the last COLS elements of each of ROWS rows, optional affine weight/bias;
// RMS = 1: RMSNorm (x * rsqrt(mean(x^2) + EPS) * w: no mean subtracted).
layout(constant_id = 1) const int ROWS = 1;
layout(constant_id = 2) const int COLS = 1;
layout(constant_id = 3) const int HAS_W = 0;
layout(constant_id = 4) const int HAS_B = 0;
layout(constant_id = 5) const float EPS = 1e-5;
// COOP = 1 (rows of >= 64 values): one workgroup per row (64 or 256 invocations: the
// workgroup size), strided loads and shared-memory reductions; else one invocation per row.
layout(constant_id = 6) const int COOP = 0;
layout(constant_id = 7) const int RMS = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
shared float red[256];
float wg_sum(float v) {
  uint lid = gl_LocalInvocationIndex;
  red[lid] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void coop() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= uint(ROWS)) return;  // whole workgroup: no barrier is skipped
  int base = int(row) * COLS;
  int lid = int(gl_LocalInvocationIndex);
  const int wg = int(gl_WorkGroupSize.x);
  float mean = 0.0;
  if (RMS == 0) {  // a specialisation constant: the whole workgroup takes the same branch
    float s = 0.0;
    for (int c = lid; c < COLS; c += wg) s += float(x[base + c]);
    mean = wg_sum(s) / float(COLS);
  }
  float q = 0.0;
  for (int c = lid; c < COLS; c += wg) { float d = float(x[base + c]) - mean; q += d * d; }
  float rstd = inversesqrt(wg_sum(q) / float(COLS) + EPS);
  for (int c = lid; c < COLS; c += wg) {
    float v = (float(x[base + c]) - mean) * rstd;
    if (HAS_W != 0) v *= float(w[c]);
    if (HAS_B != 0) v += float(b[c]);
    y[base + c] = FLOAT_T(v);
  }
}

void main() {
  if (COOP != 0) {
    coop();
    return;
  }
  uint id = linear_id();
  if (id >= uint(ROWS)) return;
  int base = int(id) * COLS;
  float mean = 0.0;
  if (RMS == 0) {
    for (int c = 0; c < COLS; ++c) mean += float(x[base + c]);
    mean /= float(COLS);
  }
  float var = 0.0;
  for (int c = 0; c < COLS; ++c) { float d = float(x[base + c]) - mean; var += d * d; }
  var /= float(COLS);
  float rstd = inversesqrt(var + EPS);
  for (int c = 0; c < COLS; ++c) {
    float v = (float(x[base + c]) - mean) * rstd;
    if (HAS_W != 0) v *= float(w[c]);
    if (HAS_B != 0) v += float(b[c]);
    y[base + c] = FLOAT_T(v);
  }
}
