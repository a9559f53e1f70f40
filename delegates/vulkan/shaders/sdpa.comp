#version 450
#include "storage.glsl"
#extension GL_EXT_control_flow_attributes : require
// Ember Vulkan delegate: scaled dot-product attention without a cache, in one dispatch:
// y = softmax(q . k^T * SCALE + mask) . v for q [B, H, L, E], k [B, H, S, E], v [B, H, S, EV],
// an optional additive float mask broadcast to [B, H, L, S], y [B, H, L, EV] (what the decomposed
// form, two matmuls, a scale, a softmax and the transpose of k, took five dispatches for).
// Every operand is read, and y written, through an element offset and four strides (push
// constants): the permutes, selects and views between a projection and the attention (a
// ViT's q, k, v split out of one qkv linear, the heads moved in front of the tokens) and the
// permute after it fold into this dispatch's indexing (runtime/dispatch_fusion.h).
// One 64-invocation workgroup per QR = 4 query rows (b, h, l0 .. l0 + 3); the workgroup index
// may be 2D (x, y). Keys come in tiles of KT = 32 rows staged in shared memory (loads
// coalesced along each key row, however k is laid out in memory): invocation t scores key
// t % 32 of the tile for two of the four query rows. The rows' S scores live in shared memory
// (the runtime checks they fit: sdpa_shared_floats()); then invocation i computes output
// elements i, i + 64, ... of all four rows, each value row read once for the four.
// Loops over keys are not unrolled: with S and E constant the driver would unroll them whole
// (a ViT's 197 x 64), which cost the H200's compiler 100-130 ms for one pipeline.
layout(local_size_x_id = 0) in;  // 64
layout(constant_id = 1) const int B = 1;
layout(constant_id = 2) const int H = 1;
layout(constant_id = 3) const int L = 1;
layout(constant_id = 4) const int S = 1;
layout(constant_id = 5) const int E = 1;
layout(constant_id = 6) const int EV = 1;
layout(constant_id = 7) const float SCALE = 1.0;
layout(constant_id = 8) const int HAS_MASK = 0;
// Element offset and the strides of dims 0..3 of q, k, v, the mask and y, in that order.
layout(push_constant) uniform Layouts { int at[25]; } pc;
layout(std430, set = 0, binding = 0) readonly buffer Q { FLOAT_T q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { FLOAT_T k[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { FLOAT_T v[]; };
layout(std430, set = 0, binding = 3) readonly buffer M { FLOAT_T mask[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { FLOAT_T y[]; };
const int QR = 4, KT = 32;
shared float qs[QR][E];      // the rows' queries, scaled
shared float ks[KT][E + 1];  // a tile of keys, rows padded by one (conflict-free column reads)
shared float sc[QR][S];      // the rows' scores, then their probabilities
shared vec4 red[64];         // reductions of the four rows at once

// Element (i0, i1, i2, i3) of operand `o` (0 q, 1 k, 2 v, 3 mask, 4 y).
int at(int o, int i0, int i1, int i2, int i3) {
  const int p = 5 * o;
  return pc.at[p] + i0 * pc.at[p + 1] + i1 * pc.at[p + 2] + i2 * pc.at[p + 3] + i3 * pc.at[p + 4];
}

vec4 wg_reduce(vec4 x, bool take_max) {
  const uint lid = gl_LocalInvocationIndex;
  red[lid] = x;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] = take_max ? max(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier();
  }
  const vec4 r = red[0];
  barrier();
  return r;
}

void main() {
  const uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  const int row_groups = (L + QR - 1) / QR;
  if (wg >= uint(B * H * row_groups)) return;  // whole workgroup: no barrier is skipped
  const int l0 = (int(wg) % row_groups) * QR, h = (int(wg) / row_groups) % H, b = int(wg) / (row_groups * H);
  const int lid = int(gl_LocalInvocationIndex);
  [[dont_unroll]] for (int i = lid; i < QR * E; i += 64) {
    const int r = i / E, e = i - r * E;
    qs[r][e] = l0 + r < L ? float(q[at(0, b, h, l0 + r, e)]) * SCALE : 0.0;
  }
  const int jj = lid % KT, r0 = (lid / KT) * 2;  // this invocation's key of a tile, first row
  [[dont_unroll]] for (int j0 = 0; j0 < S; j0 += KT) {
    barrier();  // the previous tile's readers are done (and, the first time, qs is written)
    [[dont_unroll]] for (int i = lid; i < KT * E; i += 64) {
      const int t = i / E, e = i - t * E;
      ks[t][e] = j0 + t < S ? float(k[at(1, b, h, j0 + t, e)]) : 0.0;
    }
    barrier();
    const int j = j0 + jj;
    if (j < S) {
      vec2 s2 = vec2(0.0);
      for (int e = 0; e < E; ++e) s2 += vec2(qs[r0][e], qs[r0 + 1][e]) * ks[jj][e];
      for (int rr = 0; rr < 2; ++rr) {
        const int l = min(l0 + r0 + rr, L - 1);  // rows past L compute, unstored
        sc[r0 + rr][j] = s2[rr] + (HAS_MASK != 0 ? float(mask[at(3, b, h, l, j)]) : 0.0);
      }
    }
  }
  barrier();
  vec4 m = vec4(uintBitsToFloat(0xff800000u));  // -inf
  [[dont_unroll]] for (int j = lid; j < S; j += 64) m = max(m, vec4(sc[0][j], sc[1][j], sc[2][j], sc[3][j]));
  m = wg_reduce(m, true);
  vec4 sum = vec4(0.0);
  [[dont_unroll]] for (int j = lid; j < S; j += 64) {
    const vec4 p = exp(vec4(sc[0][j], sc[1][j], sc[2][j], sc[3][j]) - m);
    for (int r = 0; r < QR; ++r) sc[r][j] = p[r];
    sum += p;
  }
  sum = wg_reduce(sum, false);  // its barriers also publish every probability
  const vec4 inv = 1.0 / sum;
  [[dont_unroll]] for (int e = lid; e < EV; e += 64) {
    const int vcol = at(2, b, h, 0, e), vj = pc.at[13];  // v's key stride
    vec4 acc = vec4(0.0);  // four rows: four independent sums
    [[dont_unroll]] for (int j = 0; j < S; ++j) acc += vec4(sc[0][j], sc[1][j], sc[2][j], sc[3][j]) * float(v[vcol + j * vj]);
    for (int r = 0; r < QR; ++r)
      if (l0 + r < L) y[at(4, b, h, l0 + r, e)] = FLOAT_T(acc[r] * inv[r]);
  }
}
