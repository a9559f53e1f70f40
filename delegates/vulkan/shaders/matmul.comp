#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): float buffers hold float16_t; every load widens to
// fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#else
#define FLOAT_T float
#endif
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// y[bt] = a[bt] (M x K) @ b[bt] (K x N, or N x K when TRANS_B) + bias, then clamp.
// A_BS / B_BS: batch strides in elements (0 broadcasts one matrix over all batches).
layout(constant_id = 1) const int BATCH = 1;
layout(constant_id = 2) const int M = 1;
layout(constant_id = 3) const int K = 1;
layout(constant_id = 4) const int N = 1;
layout(constant_id = 5) const int A_BS = 0;
layout(constant_id = 6) const int B_BS = 0;
layout(constant_id = 7) const int TRANS_B = 0;
layout(constant_id = 8) const int HAS_BIAS = 0;
layout(constant_id = 9) const int ACT = 0;
layout(constant_id = 10) const float ACT_MIN = 0.0;
layout(constant_id = 11) const float ACT_MAX = 0.0;
layout(std430, set = 0, binding = 0) readonly buffer A { FLOAT_T a[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bm { FLOAT_T bm[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(BATCH * M * N)) return;
  int n = int(id % uint(N));
  int t = int(id / uint(N));
  int m = t % M;
  int bt = t / M;
  int abase = bt * A_BS + m * K;
  int bbase = bt * B_BS;
  float acc = HAS_BIAS != 0 ? float(bias[n]) : 0.0;
  if (TRANS_B != 0) {
    int row = bbase + n * K;
    for (int k = 0; k < K; ++k) acc += float(a[abase + k]) * float(bm[row + k]);
  } else {
    for (int k = 0; k < K; ++k) acc += float(a[abase + k]) * float(bm[bbase + k * N + n]);
  }
  if (ACT == 1) acc = min(max(acc, ACT_MIN), ACT_MAX);
  y[id] = FLOAT_T(acc);
}
