#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): float buffers hold float16_t; every load widens to
// fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#define FLOAT4_T f16vec4
#else
#define FLOAT_T float
#define FLOAT4_T vec4
#endif
// Ember Vulkan delegate: weight-only quantized linear, y[m][n] = sum_k x[m][k] * q[n][k] *
// scales[n][k / GROUP] + bias[n] (+ residual[m][n]).
//
// Decoding reads every weight once per token, so this is a memory-latency problem: THREADS
// invocations share one output row, each issuing up to 4 independent 16-byte loads of its weight
// row (VEC = 4 words; 1 where the row is not a multiple of 16 bytes) before using any, so a whole
// row is in flight at once instead of a chain of dependent loads. Neighbouring invocations read
// neighbouring words (coalesced). x is read as vec4 straight from its buffer (the same row for
// every output: it stays in cache). The THREADS partial sums are added in shared memory. The host
// picks THREADS (a power of two dividing the workgroup) from the row length and the number of
// outputs (graph_lowering.cc). The workgroup index may be 2D (x, y) past the X limit.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int M = 1;
layout(constant_id = 2) const int K = 4;      // a multiple of the values per word
layout(constant_id = 3) const int N = 1;
layout(constant_id = 4) const int BITS = 8;   // 8: int8 [N, K]; 4: [N, K / 2], value + 8, low nibble first
layout(constant_id = 5) const int GROUP = 4;  // a multiple of the values per word
layout(constant_id = 6) const int HAS_BIAS = 0;
layout(constant_id = 7) const int THREADS = 32;  // invocations per output, a power of two
layout(constant_id = 8) const int VEC = 1;       // words per load: 4 where K / per_word % 4 == 0
layout(constant_id = 9) const int HAS_RESIDUAL = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT4_T x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer W4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { FLOAT_T y[]; };
layout(std430, set = 0, binding = 5) readonly buffer R { FLOAT_T residual[]; };
const int PER_WORD = BITS == 8 ? 4 : 8;
const int ROW_WORDS = K / PER_WORD;
const int ROW_LOADS = ROW_WORDS / VEC;
const int SLOTS = 4;  // loads in flight per invocation
shared float partial[256];

// The dot product of one 32-bit weight word (word index wi of row n) with x's row m.
float word_dot(uint word, int m, int n, int wi) {
  const int k0 = wi * PER_WORD;
  const int xv = (m * K + k0) / 4;
  float d;
  if (BITS == 8) {
    ivec4 q = (ivec4(word) << ivec4(24, 16, 8, 0)) >> 24;  // sign-extended bytes, low first
    d = dot(vec4(q), vec4(x4[xv]));
  } else {
    uvec4 lo = (uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u;
    uvec4 hi = (uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u;
    d = dot(vec4(lo) - 8.0, vec4(x4[xv])) + dot(vec4(hi) - 8.0, vec4(x4[xv + 1]));
  }
  return d * float(scales[n * (K / GROUP) + k0 / GROUP]);
}

void main() {
  const int wg_size = int(gl_WorkGroupSize.x);
  const int outs = wg_size / THREADS;
  const int row_groups = (N + outs - 1) / outs;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(M * row_groups)) return;  // whole workgroup: no barrier is skipped
  const int m = int(wg) / row_groups;
  const int lid = int(gl_LocalInvocationIndex);
  const int t = lid % THREADS;
  const int n = (int(wg) % row_groups) * outs + lid / THREADS;
  float acc = 0.0;
  if (n < N) {
    for (int base = 0; base < ROW_LOADS; base += SLOTS * THREADS) {
      uvec4 w[SLOTS];
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        if (i >= ROW_LOADS) w[s] = uvec4(0);
        else if (VEC == 4) w[s] = wq4[n * ROW_LOADS + i];
        else w[s] = uvec4(wq[n * ROW_WORDS + i], 0, 0, 0);
      }
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        if (i >= ROW_LOADS) break;
        acc += word_dot(w[s].x, m, n, i * VEC);
        if (VEC == 4) {
          acc += word_dot(w[s].y, m, n, i * VEC + 1);
          acc += word_dot(w[s].z, m, n, i * VEC + 2);
          acc += word_dot(w[s].w, m, n, i * VEC + 3);
        }
      }
    }
  }
  partial[lid] = acc;
  barrier();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) partial[lid] += partial[lid + s];
    barrier();
  }
  if (t == 0 && n < N) {
    float v = partial[lid];
    if (HAS_BIAS != 0) v += float(bias[n]);
    if (HAS_RESIDUAL != 0) v += float(residual[m * N + n]);
    y[m * N + n] = FLOAT_T(v);
  }
}
