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
// scales[n][k / GROUP] + bias[n], with optional fused neighbours (runtime/dispatch_fusion.h):
//   NORM:     x is RMS-normalised first, x[m][k] * gamma[k] / rms(x[m]) (the RMSNorm feeding it);
//   GATED:    y = silu(the dot with weights 1) * (the dot with weights 2: w2, s2), the SwiGLU of a
//             gate and an up projection of the same x;
//   RESIDUAL: y += residual[m][n] (the residual add after it).
//
// Decoding reads every weight once per token, so this is a memory-latency problem: THREADS
// invocations share one output row, each issuing up to 4 independent 16-byte loads of its weight
// row (VEC = 4 words; 1 where the row is not a multiple of 16 bytes) before using any, so a whole
// row is in flight at once instead of a chain of dependent loads. Neighbouring invocations read
// neighbouring words (coalesced). x is read as vec4 straight from its buffer (the same row for
// every output: it stays in cache). NORM sums the squares of the x values each invocation reads
// anyway: an output's THREADS invocations together read the whole row. The THREADS partial sums
// are added in shared memory. The host
// picks THREADS (a power of two dividing the workgroup) from the row length and the number of
// outputs (graph_lowering.cc). A workgroup's outputs all belong to one row m of x. The workgroup
// index may be 2D (x, y) past the X limit.
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
layout(constant_id = 10) const int NORM = 0;
layout(constant_id = 11) const float EPS = 1e-6;  // NORM's epsilon
layout(constant_id = 12) const int GATED = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT4_T x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 1) readonly buffer W4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { FLOAT_T y[]; };
layout(std430, set = 0, binding = 5) readonly buffer R { FLOAT_T residual[]; };
layout(std430, set = 0, binding = 6) readonly buffer G { FLOAT4_T gamma4[]; };
layout(std430, set = 0, binding = 7) readonly buffer W2 { uint wq2[]; };
layout(std430, set = 0, binding = 7) readonly buffer W24 { uvec4 wq24[]; };
layout(std430, set = 0, binding = 8) readonly buffer S2 { FLOAT_T scales2[]; };
const int PER_WORD = BITS == 8 ? 4 : 8;
const int ROW_WORDS = K / PER_WORD;
const int ROW_LOADS = ROW_WORDS / VEC;
const int SLOTS = 4;  // loads in flight per invocation (per weight matrix)
shared float partial[256];
shared float partial2[256];  // GATED: the second dot
shared float partial3[256];  // NORM: the sum of squares

// x's values k0 .. k0 + 3 of row m (NORM: times gamma, their squares added to *ss; the
// 1 / rms factor is applied last).
vec4 x_at(int m, int k0, bool count, inout float ss) {
  vec4 v = vec4(x4[(m * K + k0) / 4]);
  if (NORM != 0) {
    if (count) ss += dot(v, v);
    v *= vec4(gamma4[k0 / 4]);
  }
  return v;
}

// The dot product of one 32-bit weight word (word index wi of a row) with x's row m, unscaled.
float word_dot(uint word, int m, int wi, bool count, inout float ss) {
  const int k0 = wi * PER_WORD;
  if (BITS == 8) {
    ivec4 q = (ivec4(word) << ivec4(24, 16, 8, 0)) >> 24;  // sign-extended bytes, low first
    return dot(vec4(q), x_at(m, k0, count, ss));
  }
  uvec4 lo = (uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u;
  uvec4 hi = (uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u;
  return dot(vec4(lo) - 8.0, x_at(m, k0, count, ss)) + dot(vec4(hi) - 8.0, x_at(m, k0 + 4, count, ss));
}

uvec4 load(bool second, int n, int i) {
  if (VEC == 4) return second ? wq24[n * ROW_LOADS + i] : wq4[n * ROW_LOADS + i];
  return uvec4(second ? wq2[n * ROW_WORDS + i] : wq[n * ROW_WORDS + i], 0, 0, 0);
}

// The second weights' dot leaves *ss alone: the first counted x's squares.
float load_dot(uvec4 w, bool second, int m, int n, int i, inout float ss) {
  float d = 0.0;
  for (int j = 0; j < VEC; ++j) {
    const int wi = i * VEC + j;
    const int g = n * (K / GROUP) + wi * PER_WORD / GROUP;
    d += word_dot(w[j], m, wi, !second, ss) * float(second ? scales2[g] : scales[g]);
  }
  return d;
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
  float acc = 0.0, acc2 = 0.0, ss = 0.0;
  if (n < N) {
    for (int base = 0; base < ROW_LOADS; base += SLOTS * THREADS) {
      uvec4 w[SLOTS], w2[SLOTS];
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        w[s] = i < ROW_LOADS ? load(false, n, i) : uvec4(0);
        if (GATED != 0) w2[s] = i < ROW_LOADS ? load(true, n, i) : uvec4(0);
      }
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        if (i >= ROW_LOADS) break;
        acc += load_dot(w[s], false, m, n, i, ss);
        if (GATED != 0) acc2 += load_dot(w2[s], true, m, n, i, ss);
      }
    }
  }
  partial[lid] = acc;
  if (GATED != 0) partial2[lid] = acc2;
  if (NORM != 0) partial3[lid] = ss;
  barrier();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) {
      partial[lid] += partial[lid + s];
      if (GATED != 0) partial2[lid] += partial2[lid + s];
      if (NORM != 0) partial3[lid] += partial3[lid + s];
    }
    barrier();
  }
  if (t == 0 && n < N) {
    const float inv_rms = NORM != 0 ? inversesqrt(partial3[lid] / float(K) + EPS) : 1.0;
    float v = partial[lid] * inv_rms;
    if (HAS_BIAS != 0) v += float(bias[n]);
    if (GATED != 0) v = v / (1.0 + exp(-v)) * (partial2[lid] * inv_rms);
    if (HAS_RESIDUAL != 0) v += float(residual[m * N + n]);
    y[m * N + n] = FLOAT_T(v);
  }
}
