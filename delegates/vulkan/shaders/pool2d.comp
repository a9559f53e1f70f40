#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// Max / average / adaptive-average 2-D pooling over NCHW (NC planes).
layout(constant_id = 1) const int NC = 1;
layout(constant_id = 2) const int IH = 1;
layout(constant_id = 3) const int IW = 1;
layout(constant_id = 4) const int OH = 1;
layout(constant_id = 5) const int OW = 1;
layout(constant_id = 6) const int KH = 1;
layout(constant_id = 7) const int KW = 1;
layout(constant_id = 8) const int SH = 1;
layout(constant_id = 9) const int SW = 1;
layout(constant_id = 10) const int PH = 0;
layout(constant_id = 11) const int PW = 0;
layout(constant_id = 12) const int DH = 1;
layout(constant_id = 13) const int DW = 1;
layout(constant_id = 14) const int MODE = 0;  // 0 max, 1 avg, 2 adaptive avg
layout(constant_id = 15) const int COUNT_INCLUDE_PAD = 1;
layout(constant_id = 16) const int DIVISOR = 0;  // avg divisor_override (0: none)
// PLANE_REDUCE (adaptive average to 1x1 over a large plane): one 64-invocation workgroup per
// plane, strided partial sums added in shared memory.
layout(constant_id = 17) const int PLANE_REDUCE = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { FLOAT_T y[]; };
shared float sums[64];

void plane_mean() {
  uint plane = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (plane >= uint(NC)) return;  // whole workgroup: no barrier is skipped
  uint lid = gl_LocalInvocationIndex;
  const int size = IH * IW;
  float s = 0.0;
  for (int i = int(lid); i < size; i += 64) s += float(x[int(plane) * size + i]);
  sums[lid] = s;
  barrier();
  for (uint w = 32; w > 0; w >>= 1) {
    if (lid < w) sums[lid] += sums[lid + w];
    barrier();
  }
  if (lid == 0) y[plane] = FLOAT_T(sums[0] / float(size));
}

void main() {
  if (PLANE_REDUCE != 0) {
    plane_mean();
    return;
  }
  uint id = linear_id();
  if (id >= uint(NC * OH * OW)) return;
  int ow = int(id % uint(OW));
  int t = int(id / uint(OW));
  int oh = t % OH;
  int plane = t / OH;
  int base = plane * IH * IW;
  if (MODE == 0) {
    float m = uintBitsToFloat(0xff800000u);  // -inf
    for (int kh = 0; kh < KH; ++kh) {
      int ih = oh * SH - PH + kh * DH;
      if (ih < 0 || ih >= IH) continue;
      for (int kw = 0; kw < KW; ++kw) {
        int iw = ow * SW - PW + kw * DW;
        if (iw < 0 || iw >= IW) continue;
        float v = float(x[base + ih * IW + iw]);
        if (v > m || isnan(v)) m = v;
      }
    }
    y[id] = FLOAT_T(m);
    return;
  }
  int hs, he, ws, we;
  float divisor;
  if (MODE == 1) {
    hs = oh * SH - PH; ws = ow * SW - PW;
    he = min(hs + KH, IH + PH); we = min(ws + KW, IW + PW);
    int pool = (he - hs) * (we - ws);
    hs = max(hs, 0); ws = max(ws, 0); he = min(he, IH); we = min(we, IW);
    if (DIVISOR != 0) divisor = float(DIVISOR);
    else if (COUNT_INCLUDE_PAD != 0) divisor = float(pool);
    else divisor = float((he - hs) * (we - ws));
  } else {
    hs = (oh * IH) / OH; he = ((oh + 1) * IH + OH - 1) / OH;
    ws = (ow * IW) / OW; we = ((ow + 1) * IW + OW - 1) / OW;
    divisor = float((he - hs) * (we - ws));
  }
  float s = 0.0;
  for (int ih = hs; ih < he; ++ih)
    for (int iw = ws; iw < we; ++iw) s += float(x[base + ih * IW + iw]);
  y[id] = FLOAT_T(s / divisor);
}
