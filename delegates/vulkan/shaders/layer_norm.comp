#version 450
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Layer norm over the last COLS elements of each of ROWS rows, optional affine weight/bias.
layout(constant_id = 1) const int ROWS = 1;
layout(constant_id = 2) const int COLS = 1;
layout(constant_id = 3) const int HAS_W = 0;
layout(constant_id = 4) const int HAS_B = 0;
layout(constant_id = 5) const float EPS = 1e-5;
layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { float b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { float y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(ROWS)) return;
  int base = int(id) * COLS;
  float mean = 0.0;
  for (int c = 0; c < COLS; ++c) mean += x[base + c];
  mean /= float(COLS);
  float var = 0.0;
  for (int c = 0; c < COLS; ++c) { float d = x[base + c] - mean; var += d * d; }
  var /= float(COLS);
  float rstd = inversesqrt(var + EPS);
  for (int c = 0; c < COLS; ++c) {
    float v = (x[base + c] - mean) * rstd;
    if (HAS_W != 0) v *= w[c];
    if (HAS_B != 0) v += b[c];
    y[base + c] = v;
  }
}
