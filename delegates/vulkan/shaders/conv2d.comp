#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// 2-D convolution, NCHW, groups (depthwise = groups == C), fused bias and clamp activation.
layout(constant_id = 1) const int N = 1;
layout(constant_id = 2) const int IC = 1;
layout(constant_id = 3) const int IH = 1;
layout(constant_id = 4) const int IW = 1;
layout(constant_id = 5) const int OC = 1;
layout(constant_id = 6) const int OH = 1;
layout(constant_id = 7) const int OW = 1;
layout(constant_id = 8) const int KH = 1;
layout(constant_id = 9) const int KW = 1;
layout(constant_id = 10) const int SH = 1;
layout(constant_id = 11) const int SW = 1;
layout(constant_id = 12) const int PH = 0;
layout(constant_id = 13) const int PW = 0;
layout(constant_id = 14) const int DH = 1;
layout(constant_id = 15) const int DW = 1;
layout(constant_id = 16) const int G = 1;
layout(constant_id = 17) const int HAS_BIAS = 0;
layout(constant_id = 18) const int ACT = 0;
layout(constant_id = 19) const float ACT_MIN = 0.0;
layout(constant_id = 20) const float ACT_MAX = 0.0;
// TILED = 1 (chosen by the runtime when a group has >= 16 output channels): the convolution
// as an implicit GEMM per (image, group): [OC/G, IC/G*KH*KW] weights x [IC/G*KH*KW, OH*OW]
// input patches gathered on the fly (zero padding), in 32x32 output tiles of one
// 64-invocation workgroup each, 16 k-steps staged in shared memory, 4x4 outputs per
// invocation. Depthwise convolutions keep the direct loop below.
layout(constant_id = 21) const int TILED = 0;
// KSPLIT = 1 (deep reductions over few outputs, e.g. ResNet's 7x7x512 layers): a workgroup
// computes 8 consecutive outputs, each summed by 8 invocations over interleaved input
// channels, then added up in shared memory: 8x the parallelism of the direct loop.
layout(constant_id = 22) const int KSPLIT = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
const int TM = 32, TN = 32, TK = 16;
shared float As[TK][TM];
shared float Bs[TK][TN];

void tiled() {
  const int OCG = OC / G, ICG = IC / G, KK = ICG * KH * KW, P = OH * OW;
  const int tiles_m = (OCG + TM - 1) / TM, tiles_n = (P + TN - 1) / TN;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(N * G * tiles_m * tiles_n)) return;  // whole workgroup: no barrier is skipped
  int tn = int(wg % uint(tiles_n));
  int t = int(wg / uint(tiles_n));
  int tm = t % tiles_m;
  t /= tiles_m;
  int g = t % G;
  int n = t / G;
  int lid = int(gl_LocalInvocationIndex);
  int tx = lid % 8, ty = lid / 8;
  int wbase = g * OCG * KK;
  int xbase = (n * IC + g * ICG) * IH * IW;
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
  for (int k0 = 0; k0 < KK; k0 += TK) {
    for (int j = 0; j < 8; ++j) {
      int i = lid + 64 * j;
      int r = i / TK, kk = i % TK;
      int gm = tm * TM + r, gk = k0 + kk;
      As[kk][r] = (gm < OCG && gk < KK) ? float(w[wbase + gm * KK + gk]) : 0.0;
      int kb = i / TN, c = i % TN;
      int gp = tn * TN + c, gkb = k0 + kb;
      float v = 0.0;
      if (gp < P && gkb < KK) {
        int ic = gkb / (KH * KW), rem = gkb % (KH * KW);
        int ih = (gp / OW) * SH - PH + (rem / KW) * DH;
        int iw = (gp % OW) * SW - PW + (rem % KW) * DW;
        if (ih >= 0 && ih < IH && iw >= 0 && iw < IW) v = float(x[xbase + (ic * IH + ih) * IW + iw]);
      }
      Bs[kb][c] = v;
    }
    barrier();
    for (int kk = 0; kk < TK; ++kk) {
      vec4 av = vec4(As[kk][ty * 4], As[kk][ty * 4 + 1], As[kk][ty * 4 + 2], As[kk][ty * 4 + 3]);
      vec4 bv = vec4(Bs[kk][tx * 4], Bs[kk][tx * 4 + 1], Bs[kk][tx * 4 + 2], Bs[kk][tx * 4 + 3]);
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    barrier();
  }
  for (int r = 0; r < 4; ++r) {
    int m = tm * TM + ty * 4 + r;
    if (m >= OCG) break;
    int oc = g * OCG + m;
    float bias_v = HAS_BIAS != 0 ? float(b[oc]) : 0.0;
    for (int c = 0; c < 4; ++c) {
      int gp = tn * TN + tx * 4 + c;
      if (gp >= P) continue;
      float v = acc[r][c] + bias_v;
      if (ACT == 1) v = min(max(v, ACT_MIN), ACT_MAX);
      y[(n * OC + oc) * P + gp] = FLOAT_T(v);
    }
  }
}

shared float partial[64];

void ksplit() {
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  int lid = int(gl_LocalInvocationIndex);
  int slot = lid % 8, part = lid / 8;  // neighbours take neighbouring outputs: coalesced reads
  int id = int(wg) * 8 + slot;
  bool live = id < N * OC * OH * OW;
  float acc = 0.0;
  int oc = 0;
  if (live) {
    int ow = id % OW;
    int t = id / OW;
    int oh = t % OH; t /= OH;
    oc = t % OC;
    int n = t / OC;
    int icg = IC / G;
    int g = oc / (OC / G);
    int ih0 = oh * SH - PH;
    int iw0 = ow * SW - PW;
    for (int ic = part; ic < icg; ic += 8) {
      int xbase = (n * IC + g * icg + ic) * IH;
      int wbase = (oc * icg + ic) * KH;
      for (int kh = 0; kh < KH; ++kh) {
        int ih = ih0 + kh * DH;
        if (ih < 0 || ih >= IH) continue;
        for (int kw = 0; kw < KW; ++kw) {
          int iw = iw0 + kw * DW;
          if (iw < 0 || iw >= IW) continue;
          acc += float(x[(xbase + ih) * IW + iw]) * float(w[(wbase + kh) * KW + kw]);
        }
      }
    }
  }
  partial[lid] = acc;
  barrier();
  if (part == 0 && live) {
    float v = HAS_BIAS != 0 ? float(b[oc]) : 0.0;
    for (int p = 0; p < 8; ++p) v += partial[p * 8 + slot];
    if (ACT == 1) v = min(max(v, ACT_MIN), ACT_MAX);
    y[id] = FLOAT_T(v);
  }
}

void main() {
  if (TILED != 0) {
    tiled();
    return;
  }
  if (KSPLIT != 0) {
    ksplit();
    return;
  }
  uint id = linear_id();
  if (id >= uint(N * OC * OH * OW)) return;
  int ow = int(id % uint(OW));
  int t = int(id / uint(OW));
  int oh = t % OH; t /= OH;
  int oc = t % OC;
  int n = t / OC;
  int icg = IC / G;
  int g = oc / (OC / G);
  float acc = HAS_BIAS != 0 ? float(b[oc]) : 0.0;
  int ih0 = oh * SH - PH;
  int iw0 = ow * SW - PW;
  for (int ic = 0; ic < icg; ++ic) {
    int xbase = (n * IC + g * icg + ic) * IH;
    int wbase = (oc * icg + ic) * KH;
    for (int kh = 0; kh < KH; ++kh) {
      int ih = ih0 + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        int iw = iw0 + kw * DW;
        if (iw < 0 || iw >= IW) continue;
        acc += float(x[(xbase + ih) * IW + iw]) * float(w[(wbase + kh) * KW + kw]);
      }
    }
  }
  if (ACT == 1) acc = min(max(acc, ACT_MIN), ACT_MAX);
  y[id] = FLOAT_T(acc);
}
