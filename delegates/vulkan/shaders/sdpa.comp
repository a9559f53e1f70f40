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
// One 64-invocation workgroup per query row (b, h, l); the workgroup index may be 2D (x, y).
// The row's S scores live in shared memory (the runtime checks they fit); invocation i takes
// keys i, i + 64, ... for the scores and output elements i, i + 64, ... for the weighted sum.
// The loops over keys are not unrolled: with S and E constant the driver would unroll them
// whole (a ViT's 197 x 64), which cost the H200's compiler 100-130 ms for this one pipeline.
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
shared float qrow[E];
shared float scores[S];
shared float red[64];

// Element (i0, i1, i2, i3) of operand `o` (0 q, 1 k, 2 v, 3 mask, 4 y).
int at(int o, int i0, int i1, int i2, int i3) {
  const int p = 5 * o;
  return pc.at[p] + i0 * pc.at[p + 1] + i1 * pc.at[p + 2] + i2 * pc.at[p + 3] + i3 * pc.at[p + 4];
}

float wg_reduce(float x, bool take_max) {
  const uint lid = gl_LocalInvocationIndex;
  red[lid] = x;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] = take_max ? max(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier();
  }
  const float r = red[0];
  barrier();
  return r;
}

void main() {
  const uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= uint(B * H * L)) return;  // whole workgroup: no barrier is skipped
  const int l = int(row) % L, h = (int(row) / L) % H, b = int(row) / (L * H);
  const int lid = int(gl_LocalInvocationIndex);
  for (int e = lid; e < E; e += 64) qrow[e] = float(q[at(0, b, h, l, e)]) * SCALE;
  barrier();
  float m = uintBitsToFloat(0xff800000u);  // -inf
  [[dont_unroll]] for (int j = lid; j < S; j += 64) {
    const int krow = at(1, b, h, j, 0), ke = pc.at[9];  // k's element stride
    // Four independent sums (the row's loads in flight together), as below.
    vec4 s4 = vec4(0.0);
    int e = 0;
    for (; e + 3 < E; e += 4) {
      const int at_e = krow + e * ke;
      s4 += vec4(qrow[e], qrow[e + 1], qrow[e + 2], qrow[e + 3]) *
            vec4(float(k[at_e]), float(k[at_e + ke]), float(k[at_e + 2 * ke]), float(k[at_e + 3 * ke]));
    }
    for (; e < E; ++e) s4.x += qrow[e] * float(k[krow + e * ke]);
    float s = s4.x + s4.y + s4.z + s4.w;
    if (HAS_MASK != 0) s += float(mask[at(3, b, h, l, j)]);
    scores[j] = s;
    m = max(m, s);
  }
  m = wg_reduce(m, true);
  float sum = 0.0;
  [[dont_unroll]] for (int j = lid; j < S; j += 64) {
    const float p = exp(scores[j] - m);
    scores[j] = p;
    sum += p;
  }
  sum = wg_reduce(sum, false);  // its barriers also publish every scores[j]
  const float inv = 1.0 / sum;
  [[dont_unroll]] for (int e = lid; e < EV; e += 64) {
    const int vcol = at(2, b, h, 0, e), vj = pc.at[13];  // v's key stride
    // Four independent sums: four loads in flight rather than one dependent chain of S.
    vec4 acc = vec4(0.0);
    int j = 0;
    [[dont_unroll]] for (; j + 3 < S; j += 4) {
      const int at_j = vcol + j * vj;
      acc += vec4(scores[j], scores[j + 1], scores[j + 2], scores[j + 3]) *
             vec4(float(v[at_j]), float(v[at_j + vj]), float(v[at_j + 2 * vj]), float(v[at_j + 3 * vj]));
    }
    for (; j < S; ++j) acc.x += scores[j] * float(v[vcol + j * vj]);
    y[at(4, b, h, l, e)] = FLOAT_T((acc.x + acc.y + acc.z + acc.w) * inv);
  }
}
