#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): float buffers hold float16_t; every load widens to
// fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#else
#define FLOAT_T float
#endif
// Ember Vulkan delegate: weight-only quantized linear, y[m][n] = sum_k x[m][k] * q[n][k] *
// scales[n][k / GROUP] + bias[n]. A workgroup computes WG / 32 outputs of one row of x, 32
// invocations each: the row of x is staged in shared memory (CHUNK values at a time) and each
// invocation reads 32-bit words of its weight row (4 int8 or 8 int4 values: coalesced across
// the 32), summed in shared memory. The workgroup index may be 2D (x, y) past the X limit.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int M = 1;
layout(constant_id = 2) const int K = 4;
layout(constant_id = 3) const int N = 1;
layout(constant_id = 4) const int BITS = 8;   // 8: int8 [N, K]; 4: [N, K / 2], value + 8, low nibble first
layout(constant_id = 5) const int GROUP = 4;  // a multiple of the values per word
layout(constant_id = 6) const int HAS_BIAS = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { FLOAT_T y[]; };
const int LANES = 32;
const int CHUNK = 2048;  // a multiple of 8 values
shared float xs[CHUNK];
shared float partial[256];

void main() {
  const int wg_size = int(gl_WorkGroupSize.x);
  const int rows = wg_size / LANES;
  const int row_groups = (N + rows - 1) / rows;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(M * row_groups)) return;  // whole workgroup: no barrier is skipped
  int m = int(wg) / row_groups;
  int lid = int(gl_LocalInvocationIndex);
  int lane = lid % LANES;
  int n = (int(wg) % row_groups) * rows + lid / LANES;
  const int per_word = BITS == 8 ? 4 : 8;
  float acc = 0.0;
  for (int c0 = 0; c0 < K; c0 += CHUNK) {
    int len = min(CHUNK, K - c0);
    barrier();
    for (int i = lid; i < len; i += wg_size) xs[i] = float(x[m * K + c0 + i]);
    barrier();
    if (n < N) {
      int wbase = (n * K + c0) / per_word, sbase = n * (K / GROUP);
      for (int wi = lane; wi < len / per_word; wi += LANES) {
        uint word = wq[wbase + wi];
        int k0 = wi * per_word;
        float dot = 0.0;
        if (BITS == 8) {
          for (int j = 0; j < 4; ++j) dot += float(bitfieldExtract(int(word), 8 * j, 8)) * xs[k0 + j];
        } else {
          for (int j = 0; j < 8; ++j) dot += float(int(bitfieldExtract(word, 4 * j, 4)) - 8) * xs[k0 + j];
        }
        acc += dot * float(scales[sbase + (c0 + k0) / GROUP]);
      }
    }
  }
  partial[lid] = acc;
  barrier();
  for (int s = LANES / 2; s > 0; s >>= 1) {
    if (lane < s) partial[lid] += partial[lid + s];
    barrier();
  }
  if (lane == 0 && n < N) y[m * N + n] = FLOAT_T(partial[lid] + (HAS_BIAS != 0 ? float(bias[n]) : 0.0));
}
