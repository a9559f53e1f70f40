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
// scales[n][k / GROUP] + bias[n]. One 64-invocation workgroup per output element; the
// invocations read consecutive 32-bit words of the weight row (4 int8 or 8 int4 values each:
// coalesced, the quantized weights stream through once per row of x) and sum in shared memory.
// The workgroup index may be 2D (x, y) when the outputs exceed the X limit.
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
shared float partial[64];

void main() {
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(M * N)) return;  // whole workgroup: no barrier is skipped
  int n = int(wg % uint(N));
  int m = int(wg / uint(N));
  int lid = int(gl_LocalInvocationIndex);
  const int per_word = BITS == 8 ? 4 : 8;
  const int words = K / per_word;
  int row = n * words, xrow = m * K, srow = n * (K / GROUP);
  float acc = 0.0;
  for (int wi = lid; wi < words; wi += 64) {
    uint word = wq[row + wi];
    int k0 = wi * per_word;
    float dot = 0.0;
    if (BITS == 8) {
      for (int j = 0; j < 4; ++j) dot += float(bitfieldExtract(int(word), 8 * j, 8)) * float(x[xrow + k0 + j]);
    } else {
      for (int j = 0; j < 8; ++j) dot += float(int(bitfieldExtract(word, 4 * j, 4)) - 8) * float(x[xrow + k0 + j]);
    }
    acc += dot * float(scales[srow + k0 / GROUP]);
  }
  partial[lid] = acc;
  barrier();
  for (int s = 32; s > 0; s >>= 1) {
    if (lid < s) partial[lid] += partial[lid + s];
    barrier();
  }
  if (lid == 0) y[wg] = FLOAT_T(partial[0] + (HAS_BIAS != 0 ? float(bias[n]) : 0.0));
}
