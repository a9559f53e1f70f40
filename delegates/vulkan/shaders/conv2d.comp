#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// 2-D convolution, NCHW, groups (depthwise = groups == C), fused bias and clamp activation: the
// direct loop, for what conv2d_gemm.comp's tiles do not fit (depthwise, tiny planes or depths).
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
// KSPLIT = 1 (deep reductions over few outputs, e.g. ResNet's 7x7x512 layers): a workgroup
// computes 8 consecutive outputs, each summed by 8 invocations over interleaved input
// channels, then added up in shared memory: 8x the parallelism of the direct loop.
layout(constant_id = 21) const int KSPLIT = 0;
#include "conv_activation.glsl"
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
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
    y[id] = FLOAT_T(activation(v));
  }
}

void main() {
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
  y[id] = FLOAT_T(activation(acc));
}
