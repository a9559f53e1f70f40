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
// Decoding reads every weight once per token. The workgroup stages CHUNK values of x's row m in
// shared memory (coalesced vec4 loads; NORM multiplies by gamma there and sums the squares, so
// the RMSNorm costs no extra pass), then each group of THREADS invocations computes ROWS
// neighbouring output rows: an invocation reads 32-bit words of those rows (neighbouring
// invocations, neighbouring words: coalesced), SLOTS x ROWS loads issued before any is used, and
// each x value read from shared memory serves all ROWS rows. The partial sums are added in shared
// memory. The host picks THREADS, ROWS and the workgroup (graph_lowering.cc). A workgroup's
// outputs all belong to one row m of x. The workgroup index may be 2D (x, y) past the X limit.
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const int M = 1;
layout(constant_id = 2) const int K = 4;      // a multiple of the values per word
layout(constant_id = 3) const int N = 1;
layout(constant_id = 4) const int BITS = 8;   // 8: int8 [N, K]; 4: [N, K / 2], value + 8, low nibble first
layout(constant_id = 5) const int GROUP = 4;  // a multiple of the values per word
layout(constant_id = 6) const int HAS_BIAS = 0;
layout(constant_id = 7) const int THREADS = 32;  // invocations per row group, a power of two
layout(constant_id = 8) const int ROWS = 1;      // rows per group, 1..MAX_ROWS
layout(constant_id = 9) const int HAS_RESIDUAL = 0;
layout(constant_id = 10) const int NORM = 0;
layout(constant_id = 11) const float EPS = 1e-6;  // NORM's epsilon
layout(constant_id = 12) const int GATED = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT4_T x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 4) readonly buffer R { FLOAT_T residual[]; };
layout(std430, set = 0, binding = 5) readonly buffer G { FLOAT4_T gamma4[]; };
layout(std430, set = 0, binding = 6) readonly buffer W2 { uint wq2[]; };
layout(std430, set = 0, binding = 7) readonly buffer S2 { FLOAT_T scales2[]; };
// The output is the last binding: the runtime's barriers assume every shader writes its last
// binding only (shader_library.h, checked by shader_bindings_test).
layout(std430, set = 0, binding = 8) writeonly buffer Y { FLOAT_T y[]; };
const int PER_WORD = BITS == 8 ? 4 : 8;
const int CHUNK = 2048;  // x values staged at a time (8 KiB), a multiple of 8
const int SLOTS = 2;     // words in flight per invocation and row (and weight matrix)
const int MAX_ROWS = 4;
const int MAX_WG = 128;  // the largest workgroup the host gives this shader (shared memory: 12.5 KiB)
shared vec4 xs[CHUNK / 4];
shared float partial[MAX_WG * MAX_ROWS];
shared float partial2[MAX_WG * MAX_ROWS];  // GATED: the second dots
shared float partial3[MAX_WG];             // NORM: the sums of squares

// One 32-bit weight word against staged x values from chunk word cw on, unscaled.
float word_dot(uint word, int cw) {
  if (BITS == 8) return dot(vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24), xs[cw]);  // sign-extended bytes
  uvec4 lo = (uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u;
  uvec4 hi = (uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u;
  return dot(vec4(lo) - 8.0, xs[2 * cw]) + dot(vec4(hi) - 8.0, xs[2 * cw + 1]);
}

float scale(bool second, int n, int k) {
  const int g = n * (K / GROUP) + k / GROUP;
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
  const int row_words = K / PER_WORD;
  float acc[MAX_ROWS], acc2[MAX_ROWS], ss = 0.0;
  for (int r = 0; r < ROWS; ++r) acc[r] = acc2[r] = 0.0;
  for (int c0 = 0; c0 < K; c0 += CHUNK) {
    const int len = min(CHUNK, K - c0);
    barrier();
    for (int i = lid; i < len / 4; i += wg_size) {
      vec4 v = vec4(x4[(m * K + c0) / 4 + i]);
      if (NORM != 0) {
        ss += dot(v, v);
        v *= vec4(gamma4[c0 / 4 + i]);
      }
      xs[i] = v;
    }
    barrier();
    if (n0 >= N) continue;
    const int words = len / PER_WORD, wbase = c0 / PER_WORD;
    for (int base = 0; base < words; base += SLOTS * THREADS) {
      uint w[SLOTS][MAX_ROWS], w2[SLOTS][MAX_ROWS];
      for (int s = 0; s < SLOTS; ++s) {
        const int cw = base + s * THREADS + t;
        for (int r = 0; r < ROWS; ++r) {
          const bool in_range = cw < words && n0 + r < N;
          const int at = (n0 + r) * row_words + wbase + cw;
          w[s][r] = in_range ? wq[at] : 0u;
          if (GATED != 0) w2[s][r] = in_range ? wq2[at] : 0u;
        }
      }
      for (int s = 0; s < SLOTS; ++s) {
        const int cw = base + s * THREADS + t;
        if (cw >= words) break;
        const int k = c0 + cw * PER_WORD;
        for (int r = 0; r < ROWS; ++r) {
          if (n0 + r >= N) break;
          acc[r] += word_dot(w[s][r], cw) * scale(false, n0 + r, k);
          if (GATED != 0) acc2[r] += word_dot(w2[s][r], cw) * scale(true, n0 + r, k);
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
  // Groups' partial sums over THREADS invocations; NORM's squares over the whole workgroup.
  for (int s = (NORM != 0 ? wg_size : THREADS) / 2; s > 0; s >>= 1) {
    if (s < THREADS && t < s) {
      for (int r = 0; r < ROWS; ++r) {
        partial[r * MAX_WG + lid] += partial[r * MAX_WG + lid + s];
        if (GATED != 0) partial2[r * MAX_WG + lid] += partial2[r * MAX_WG + lid + s];
      }
    }
    if (NORM != 0 && lid < s) partial3[lid] += partial3[lid + s];
    barrier();
  }
  if (t != 0) return;
  const float inv_rms = NORM != 0 ? inversesqrt(partial3[0] / float(K) + EPS) : 1.0;
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
