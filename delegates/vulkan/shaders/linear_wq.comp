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
// Decoding reads every weight once per token, so the shader is built to keep many weight loads
// in flight and to read x as little as possible: a group of THREADS invocations computes ROWS
// neighbouring output rows; each invocation issues up to SLOTS x ROWS independent 16-byte loads
// of those rows (VEC = 4 words; 1 where a row is not a multiple of 16 bytes) before using any,
// reads the matching x values once (vec4, straight from the buffer, where they stay cached) and
// uses them for all ROWS rows. Neighbouring invocations read neighbouring words (coalesced). NORM
// sums the squares of the x values read anyway: a group's invocations together read the whole
// row. The partial sums are added in shared memory. The host picks THREADS (a power of two
// dividing the workgroup) and ROWS (graph_lowering.cc). A workgroup's outputs all belong to one
// row m of x. The workgroup index may be 2D (x, y) past the X limit.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int M = 1;
layout(constant_id = 2) const int K = 4;      // a multiple of the values per word
layout(constant_id = 3) const int N = 1;
layout(constant_id = 4) const int BITS = 8;   // 8: int8 [N, K]; 4: [N, K / 2], value + 8, low nibble first
layout(constant_id = 5) const int GROUP = 4;  // a multiple of the values per word
layout(constant_id = 6) const int HAS_BIAS = 0;
layout(constant_id = 7) const int THREADS = 32;  // invocations per row group, a power of two
layout(constant_id = 8) const int VEC = 1;       // words per load: 4 where K / per_word % 4 == 0
layout(constant_id = 9) const int HAS_RESIDUAL = 0;
layout(constant_id = 10) const int NORM = 0;
layout(constant_id = 11) const float EPS = 1e-6;  // NORM's epsilon
layout(constant_id = 12) const int GATED = 0;
layout(constant_id = 13) const int ROWS = 1;      // rows per group, 1..MAX_ROWS
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
const int SLOTS = 2;     // loads in flight per invocation and row (and weight matrix)
const int MAX_ROWS = 4;
const int MAX_WG = 256;  // partial sums: MAX_WG values per row slot
shared float partial[MAX_WG * MAX_ROWS];
shared float partial2[MAX_WG * MAX_ROWS];  // GATED: the second dots
shared float partial3[MAX_WG];             // NORM: the sums of squares

// x's values k0 .. k0 + 3 of row m (NORM: times gamma, their squares added to ss; the
// 1 / rms factor is applied last).
vec4 x_at(int m, int k0, inout float ss) {
  vec4 v = vec4(x4[(m * K + k0) / 4]);
  if (NORM != 0) {
    ss += dot(v, v);
    v *= vec4(gamma4[k0 / 4]);
  }
  return v;
}

// One 32-bit weight word against x values xa (and xb: int4's second four), unscaled.
float word_dot(uint word, vec4 xa, vec4 xb) {
  if (BITS == 8) return dot(vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24), xa);  // sign-extended bytes
  uvec4 lo = (uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u;
  uvec4 hi = (uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u;
  return dot(vec4(lo) - 8.0, xa) + dot(vec4(hi) - 8.0, xb);
}

uvec4 load(bool second, int n, int i) {
  if (VEC == 4) return second ? wq24[n * ROW_LOADS + i] : wq4[n * ROW_LOADS + i];
  return uvec4(second ? wq2[n * ROW_WORDS + i] : wq[n * ROW_WORDS + i], 0, 0, 0);
}

float scale(bool second, int n, int wi) {
  const int g = n * (K / GROUP) + wi * PER_WORD / GROUP;
  return float(second ? scales2[g] : scales[g]);
}

void main() {
  const int wg_size = int(gl_WorkGroupSize.x);
  const int outs = wg_size / THREADS * ROWS;
  const int row_groups = (N + outs - 1) / outs;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(M * row_groups)) return;  // whole workgroup: no barrier is skipped
  const int m = int(wg) / row_groups;
  const int lid = int(gl_LocalInvocationIndex);
  const int t = lid % THREADS;
  const int n0 = (int(wg) % row_groups) * outs + lid / THREADS * ROWS;
  float acc[MAX_ROWS], acc2[MAX_ROWS], ss = 0.0;
  for (int r = 0; r < ROWS; ++r) acc[r] = acc2[r] = 0.0;
  if (n0 < N) {
    for (int base = 0; base < ROW_LOADS; base += SLOTS * THREADS) {
      uvec4 w[SLOTS][MAX_ROWS], w2[SLOTS][MAX_ROWS];
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        for (int r = 0; r < ROWS; ++r) {
          const bool in_range = i < ROW_LOADS && n0 + r < N;
          w[s][r] = in_range ? load(false, n0 + r, i) : uvec4(0);
          if (GATED != 0) w2[s][r] = in_range ? load(true, n0 + r, i) : uvec4(0);
        }
      }
      for (int s = 0; s < SLOTS; ++s) {
        const int i = base + s * THREADS + t;
        if (i >= ROW_LOADS) break;
        for (int j = 0; j < VEC; ++j) {
          const int wi = i * VEC + j, k0 = wi * PER_WORD;
          const vec4 xa = x_at(m, k0, ss);
          const vec4 xb = BITS == 4 ? x_at(m, k0 + 4, ss) : vec4(0.0);
          for (int r = 0; r < ROWS; ++r) {
            if (n0 + r >= N) break;
            acc[r] += word_dot(w[s][r][j], xa, xb) * scale(false, n0 + r, wi);
            if (GATED != 0) acc2[r] += word_dot(w2[s][r][j], xa, xb) * scale(true, n0 + r, wi);
          }
        }
      }
    }
  }
  for (int r = 0; r < ROWS; ++r) {
    partial[r * MAX_WG + lid] = acc[r];
    if (GATED != 0) partial2[r * MAX_WG + lid] = acc2[r];
  }
  if (NORM != 0) partial3[lid] = ss;
  barrier();
  for (int s = THREADS / 2; s > 0; s >>= 1) {
    if (t < s) {
      for (int r = 0; r < ROWS; ++r) {
        partial[r * MAX_WG + lid] += partial[r * MAX_WG + lid + s];
        if (GATED != 0) partial2[r * MAX_WG + lid] += partial2[r * MAX_WG + lid + s];
      }
      if (NORM != 0) partial3[lid] += partial3[lid + s];
    }
    barrier();
  }
  if (t != 0) return;
  const float inv_rms = NORM != 0 ? inversesqrt(partial3[lid] / float(K) + EPS) : 1.0;
  for (int r = 0; r < ROWS; ++r) {
    const int n = n0 + r;
    if (n >= N) break;
    float v = partial[r * MAX_WG + lid] * inv_rms;
    if (HAS_BIAS != 0) v += float(bias[n]);
    if (GATED != 0) v = v / (1.0 + exp(-v)) * (partial2[r * MAX_WG + lid] * inv_rms);
    if (HAS_RESIDUAL != 0) v += float(residual[m * N + n]);
    y[m * N + n] = FLOAT_T(v);
  }
}
