#version 450
#include "storage.glsl"
// Ember Vulkan delegate: weight-only quantized linear, y[m][n] = sum_k x[m][k] * q[n][k] *
// scales[n][k / GROUP] + bias[n], with optional fused neighbours (runtime/dispatch_fusion.h):
//   NORM:     x is RMS-normalised first, x[m][k] * gamma[k] / rms(x[m]) (the RMSNorm feeding it);
//   GATED:    y = silu(the dot with weights 1) * (the dot with weights 2: w2, s2), the SwiGLU of a
//             gate and an up projection of the same x;
//   RESIDUAL: y += residual[m][n] (the residual add after it);
//   SPLIT:    N2 / N3 > 0: two or three linears of the same x (an attention's q, k and v
//             projections), rows 0..N-1 from (w, scales) into y, the next N2 from (w2, s2) into
//             y2, the next N3 from (w3, s3) into y3; no bias, residual or GATED.
//
// Decoding reads every weight once per token, so the shader's job is to keep enough weight bytes
// in flight. Each group of THREADS invocations computes ROWS neighbouring output rows, all of one
// row m of x. K is walked in chunks of THREADS * XW 32-bit words: invocation t holds the x values
// of words t, t + THREADS, ... of the chunk in registers (read once, used for every row: no
// shared-memory staging and no barrier before the first weight load; NORM multiplies by gamma
// there and sums the squares), then loads BATCH rows' words and scales of the chunk at once
// (neighbouring invocations, neighbouring words: coalesced), all issued before any is used, and
// accumulates. The partial sums of a group are added in shared memory. The host picks THREADS,
// ROWS, XW and the workgroup (graph_lowering.cc). The workgroup index may be 2D (x, y) past the X
// limit. With SPLIT, each output's rows have their own workgroups (a workgroup's loads come from
// one weight buffer).
// QUADS (rows of a multiple of 4 words, one scale per 4 words): the unit of K is a quad of 4
// neighbouring words read by one 16-byte load with its one scale, instead of 4 strided words with
// 4 scales: XW counts quads (1..MAX_XQ), and a warp's load covers 512 contiguous bytes.
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
layout(constant_id = 13) const int XW = 1;       // words per invocation, row and chunk, 1..MAX_XW
layout(constant_id = 14) const int N2 = 0;       // SPLIT: rows of the second and third outputs
layout(constant_id = 15) const int N3 = 0;
layout(constant_id = 16) const int QUADS = 0;    // 1: weights read as 16-byte quads (see above)
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT4_T x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { uint wq[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer S { FLOAT_T scales[]; };
layout(std430, set = 0, binding = 4) readonly buffer R { FLOAT_T residual[]; };
layout(std430, set = 0, binding = 5) readonly buffer G { FLOAT4_T gamma4[]; };
layout(std430, set = 0, binding = 6) readonly buffer W2 { uint wq2[]; };
layout(std430, set = 0, binding = 7) readonly buffer S2 { FLOAT_T scales2[]; };
layout(std430, set = 0, binding = 8) readonly buffer W3 { uint wq3[]; };
layout(std430, set = 0, binding = 9) readonly buffer S3 { FLOAT_T scales3[]; };
// QUADS: the weight buffers again, four words to an element (a buffer starts 16-byte aligned:
// each tensor has its own VkBuffer, bound at offset 0).
layout(std430, set = 0, binding = 1) readonly buffer WQuads { uvec4 wq4[]; };
layout(std430, set = 0, binding = 6) readonly buffer W2Quads { uvec4 wq24[]; };
layout(std430, set = 0, binding = 8) readonly buffer W3Quads { uvec4 wq34[]; };
// The outputs are the last bindings: the runtime's barriers assume every shader writes only its
// last ones (shader_library.h, checked by shader_bindings_test). Without SPLIT, y2 and y3 are
// bound to y's buffer and not written.
layout(std430, set = 0, binding = 10) writeonly buffer Y { FLOAT_T y[]; };
layout(std430, set = 0, binding = 11) writeonly buffer Y2 { FLOAT_T y2[]; };
layout(std430, set = 0, binding = 12) writeonly buffer Y3 { FLOAT_T y3[]; };
const int PER_WORD = BITS == 8 ? 4 : 8;
const int MAX_ROWS = 8;
const int MAX_XW = 8;
const int MAX_XQ = 2;    // QUADS: quads per invocation and chunk (8 words, as MAX_XW)
const int BATCH = 4;     // rows whose loads are in flight together
const int MAX_WG = 128;  // the largest workgroup the host gives this shader (shared memory: 8.5 KiB)
shared float partial[MAX_WG * MAX_ROWS];
shared float partial2[MAX_WG * MAX_ROWS];  // GATED: the second dots
shared float partial3[MAX_WG];             // NORM: the sums of squares

// One 32-bit weight word against its x values (int8: 4 in a; int4: 8 in a, b), unscaled.
// Each integer value v (0..255, bias included) is turned into a float by putting it in the
// mantissa of 2^23 (the float is then exactly 2^23 + v) and subtracting 2^23 plus the bias: two
// logic operations and one add, where a conversion instruction is a quarter-rate operation on
// NVIDIA GPUs and an int4 word needs eight of them. The values and the dot products are exactly
// those of a conversion.
const uint TWO_23 = 0x4B000000u;  // the bits of 2^23
float word_dot(uint word, vec4 a, vec4 b) {
  if (BITS == 8) {
    // Two's-complement bytes with their top bit flipped are the values + 128.
    const uvec4 v = ((uvec4(word ^ 0x80808080u) >> uvec4(0, 8, 16, 24)) & 255u) | TWO_23;
    return dot(uintBitsToFloat(v) - 8388736.0, a);  // 2^23 + 128
  }
  const uvec4 lo = ((uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u) | TWO_23;
  const uvec4 hi = ((uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u) | TWO_23;
  return dot(uintBitsToFloat(lo) - 8388616.0, a) + dot(uintBitsToFloat(hi) - 8388616.0, b);  // 2^23 + 8
}

// One invocation's sums over its part of K: acc (and acc2, GATED) for its group's ROWS rows from
// n0, and ss the squares of its x values (NORM).
float acc[MAX_ROWS], acc2[MAX_ROWS], ss = 0.0;
const int row_words = K / PER_WORD;
const int group_words = GROUP / PER_WORD;  // words per scale
const int row_scales = K / GROUP;

// x value q (a vec4 index of row m's slice) for K index k4 * 4: normalised and scaled by gamma
// (NORM), its squares added to ss.
vec4 load_x(int q, int k4) {
  vec4 a = vec4(x4[q]);
  if (NORM != 0) {
    ss += dot(a, a);
    a *= vec4(gamma4[k4]);
  }
  return a;
}

// Words strided by THREADS: invocation t holds words t, t + THREADS, ... of each chunk.
vec4 xa[MAX_XW], xb[MAX_XW];
void load_x_words(int m, int t, int c0) {
  for (int i = 0; i < XW; ++i) {
    const int cw = c0 + i * THREADS + t;
    vec4 a = vec4(0.0), b = vec4(0.0);
    if (cw < row_words) {
      const int q = (m * K + cw * PER_WORD) / 4, k4 = cw * PER_WORD / 4;
      a = load_x(q, k4);
      if (BITS == 4) b = load_x(q + 1, k4 + 1);
    }
    xa[i] = a;
    xb[i] = b;
  }
}
void accumulate_words(int m, int t, int seg, int NS, int n0) {
  for (int c0 = 0; c0 < row_words; c0 += THREADS * XW) {
    for (int r0 = 0; r0 < ROWS; r0 += BATCH) {
      uint w[BATCH][MAX_XW], w2[BATCH][MAX_XW];
      float sc[BATCH][MAX_XW], sc2[BATCH][MAX_XW];
      for (int r = 0; r < BATCH; ++r) {
        const int n = n0 + r0 + r;
        for (int i = 0; i < XW; ++i) {
          const int cw = c0 + i * THREADS + t;
          const bool ok = r0 + r < ROWS && n < NS && cw < row_words;
          const int at = n * row_words + cw, g = n * row_scales + cw / group_words;
          w[r][i] = !ok ? 0u : (seg == 0 ? wq[at] : (seg == 1 ? wq2[at] : wq3[at]));
          sc[r][i] = !ok ? 0.0 : float(seg == 0 ? scales[g] : (seg == 1 ? scales2[g] : scales3[g]));
          if (GATED != 0) {
            w2[r][i] = ok ? wq2[at] : 0u;
            sc2[r][i] = ok ? float(scales2[g]) : 0.0;
          }
        }
      }
      // x after the first batch's weight loads: the two waits overlap (x comes from the cache,
      // written by the previous dispatch; the weights from memory).
      if (r0 == 0) load_x_words(m, t, c0);
      for (int r = 0; r < BATCH; ++r) {
        if (r0 + r >= ROWS) continue;
        float d = 0.0, d2 = 0.0;
        for (int i = 0; i < XW; ++i) {
          d += word_dot(w[r][i], xa[i], xb[i]) * sc[r][i];
          if (GATED != 0) d2 += word_dot(w2[r][i], xa[i], xb[i]) * sc2[r][i];
        }
        acc[r0 + r] += d;
        acc2[r0 + r] += d2;
      }
    }
  }
}

// QUADS: invocation t holds quads t, t + THREADS, ... of each chunk; a quad's x values are
// PER_WORD vec4s (int4: 32 values, int8: 16), at xv[i * 8 ...].
vec4 xv[MAX_XQ * 8];
float quad_dot(uvec4 w, int i) {
  if (BITS == 8) return word_dot(w.x, xv[i * 8], xv[i * 8]) + word_dot(w.y, xv[i * 8 + 1], xv[i * 8 + 1]) +
                        word_dot(w.z, xv[i * 8 + 2], xv[i * 8 + 2]) + word_dot(w.w, xv[i * 8 + 3], xv[i * 8 + 3]);
  return word_dot(w.x, xv[i * 8], xv[i * 8 + 1]) + word_dot(w.y, xv[i * 8 + 2], xv[i * 8 + 3]) +
         word_dot(w.z, xv[i * 8 + 4], xv[i * 8 + 5]) + word_dot(w.w, xv[i * 8 + 6], xv[i * 8 + 7]);
}
void accumulate_quads(int m, int t, int seg, int NS, int n0) {
  const int row_quads = row_words / 4, quad_values = 4 * PER_WORD;
  for (int c0 = 0; c0 < row_quads; c0 += THREADS * XW) {
    for (int r0 = 0; r0 < ROWS; r0 += BATCH) {
      uvec4 w[BATCH][MAX_XQ], w2[BATCH][MAX_XQ];
      float sc[BATCH][MAX_XQ], sc2[BATCH][MAX_XQ];
      for (int r = 0; r < BATCH; ++r) {
        const int n = n0 + r0 + r;
        for (int i = 0; i < XW; ++i) {
          const int cq = c0 + i * THREADS + t;
          const bool ok = r0 + r < ROWS && n < NS && cq < row_quads;
          const int at = n * row_quads + cq, g = n * row_scales + cq * 4 / group_words;
          w[r][i] = !ok ? uvec4(0u) : (seg == 0 ? wq4[at] : (seg == 1 ? wq24[at] : wq34[at]));
          sc[r][i] = !ok ? 0.0 : float(seg == 0 ? scales[g] : (seg == 1 ? scales2[g] : scales3[g]));
          if (GATED != 0) {
            w2[r][i] = ok ? wq24[at] : uvec4(0u);
            sc2[r][i] = ok ? float(scales2[g]) : 0.0;
          }
        }
      }
      if (r0 == 0) {  // as accumulate_words
        for (int i = 0; i < XW; ++i) {
          const int cq = c0 + i * THREADS + t;
          for (int j = 0; j < PER_WORD; ++j) {
            const int q = (m * K + cq * quad_values) / 4 + j, k4 = cq * quad_values / 4 + j;
            xv[i * 8 + j] = cq < row_quads ? load_x(q, k4) : vec4(0.0);
          }
        }
      }
      for (int r = 0; r < BATCH; ++r) {
        if (r0 + r >= ROWS) continue;
        float d = 0.0, d2 = 0.0;
        for (int i = 0; i < XW; ++i) {
          d += quad_dot(w[r][i], i) * sc[r][i];
          if (GATED != 0) d2 += quad_dot(w2[r][i], i) * sc2[r][i];
        }
        acc[r0 + r] += d;
        acc2[r0 + r] += d2;
      }
    }
  }
}

void main() {
  const int wg_size = int(gl_WorkGroupSize.x);
  const int outs = wg_size / THREADS * ROWS;
  const int groups1 = (N + outs - 1) / outs, groups2 = (N2 + outs - 1) / outs;
  const int row_groups = groups1 + groups2 + (N3 + outs - 1) / outs;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(M * row_groups)) return;  // whole workgroup: no barrier is skipped
  const int m = int(wg) / row_groups;
  const int lid = int(gl_LocalInvocationIndex);
  const int t = lid % THREADS;
  // Which output this workgroup computes (SPLIT) and its first row there.
  int rg = int(wg) % row_groups;
  const int seg = rg < groups1 ? 0 : (rg < groups1 + groups2 ? 1 : 2);
  rg -= seg == 0 ? 0 : (seg == 1 ? groups1 : groups1 + groups2);
  const int NS = seg == 0 ? N : (seg == 1 ? N2 : N3);
  const int n0 = rg * outs + lid / THREADS * ROWS;
  for (int r = 0; r < MAX_ROWS; ++r) acc[r] = acc2[r] = 0.0;
  // What is added after the gating (the bias, unless GATED; the residual), read now by the
  // invocations that write the outputs, so the wait overlaps the weights' instead of following
  // the reduction.
  float extra[MAX_ROWS];
  for (int r = 0; r < ROWS; ++r) {
    const int n = n0 + r;
    float e = 0.0;
    if (t == 0 && n < NS) {
      if (HAS_BIAS != 0 && GATED == 0) e += float(bias[n]);
      if (HAS_RESIDUAL != 0) e += float(residual[m * N + n]);
    }
    extra[r] = e;
  }
  if (QUADS != 0) {
    accumulate_quads(m, t, seg, NS, n0);
  } else {
    accumulate_words(m, t, seg, NS, n0);
  }
  for (int r = 0; r < ROWS; ++r) {
    partial[r * MAX_WG + lid] = acc[r];
    if (GATED != 0) partial2[r * MAX_WG + lid] = acc2[r];
  }
  if (NORM != 0) partial3[lid] = ss;
  barrier();
  // Each group's partial sums over its THREADS invocations (the squares too: a group reads the
  // whole row of x).
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
    if (n >= NS) break;
    float v = partial[r * MAX_WG + lid] * inv_rms;
    if (GATED != 0) {
      if (HAS_BIAS != 0) v += float(bias[n]);
      v = v / (1.0 + exp(-v)) * (partial2[r * MAX_WG + lid] * inv_rms);
    }
    v += extra[r];
    if (seg == 0) {
      y[m * N + n] = FLOAT_T(v);
    } else if (seg == 1) {
      y2[m * N2 + n] = FLOAT_T(v);
    } else {
      y3[m * N3 + n] = FLOAT_T(v);
    }
  }
}
