#version 450
#include "storage.glsl"
// Ember Vulkan delegate. 2-D convolution (NCHW, groups, fused bias and clamp activation) as an
// implicit GEMM per (image, group): [OC/G, K] weights x [K, OH*OW] input patches gathered on the
// fly (zero padding), K = IC/G * KH * KW in the weights' own (ic, kh, kw) order.
//
// PHASE 0: one 256-invocation workgroup per 64x64 output tile and reduction split; each
// invocation accumulates a 4x4 block over 16-deep k steps staged in shared memory, the next
// step's global loads issued before the current step's arithmetic. With SPLITS == 1 it writes
// Y (bias, activation); otherwise split s writes its partial sums to P[s][image][oc][pixel].
// PHASE 1 (SPLITS > 1): one invocation per output adds the SPLITS partial sums, the bias and
// the activation, and writes Y.
// HAS_RESIDUAL: the epilogue also adds R (same sizes as Y) before the activation: a following
// add (and activation) fused into the convolution (runtime/dispatch_fusion.h).
// The runtime picks SPLITS so that deep reductions over few outputs (ResNet's 7x7x512 layers:
// 8 tiles) still fill the GPU, and CHUNK (a multiple of 16) as the k range of one split.
layout(local_size_x_id = 0) in;  // 256 (the tile layout below assumes it)
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
layout(constant_id = 21) const int SPLITS = 1;
layout(constant_id = 22) const int CHUNK = 16;
layout(constant_id = 23) const int PHASE = 0;
layout(constant_id = 24) const int HAS_RESIDUAL = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 3) readonly buffer R { FLOAT_T residual[]; };
// Partial sums stay fp32 in fp16-storage programs too.
layout(std430, set = 0, binding = 4) buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { FLOAT_T y[]; };

const int BM = 64, BN = 64, BK = 16;
// k-major tiles; A's rows padded by one vec4 so the transposing stores spread over the banks.
shared vec4 As[BK][BM / 4 + 1];
shared vec4 Bs[BK][BN / 4];

#include "conv_activation.glsl"

// Output element `id` (channel oc) from its sum.
float epilogue(float v, int oc, uint id) {
  if (HAS_BIAS != 0) v += float(b[oc]);
  if (HAS_RESIDUAL != 0) v += float(residual[id]);
  return activation(v);
}

// One k step's global loads for this invocation (see gemm()); zero outside the tile, the
// split's k range and the padded image.
void load_step(int k0, int k_end, int wrow, int rows_left, int a_k, int b_k, bool pix_ok, int ih0, int iw0,
               int xbase, out float ra[4], out float rb[4]) {
  const int KHW = KH * KW, KK = (IC / G) * KHW;
  for (int j = 0; j < 4; ++j) {
    int gk = k0 + a_k;
    ra[j] = (16 * j < rows_left && gk < k_end) ? float(w[(wrow + 16 * j) * KK + gk]) : 0.0;
    gk = k0 + b_k + 4 * j;
    float v = 0.0;
    if (pix_ok && gk < k_end) {
      int ic = gk / KHW, r = gk - ic * KHW;
      int kh = r / KW, kw = r - kh * KW;
      int ih = ih0 + kh * DH, iw = iw0 + kw * DW;
      if (ih >= 0 && ih < IH && iw >= 0 && iw < IW) v = float(x[xbase + (ic * IH + ih) * IW + iw]);
    }
    rb[j] = v;
  }
}

void gemm() {
  const int OCG = OC / G, ICG = IC / G, KK = ICG * KH * KW, P = OH * OW;
  const int tiles_m = (OCG + BM - 1) / BM, tiles_n = (P + BN - 1) / BN;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(N * G * SPLITS * tiles_m * tiles_n)) return;  // whole workgroup: no barrier is skipped
  int tn = int(wg % uint(tiles_n));
  int t = int(wg / uint(tiles_n));
  int tm = t % tiles_m;
  t /= tiles_m;
  int s = t % SPLITS;
  t /= SPLITS;
  int g = t % G;
  int n = t / G;
  int lid = int(gl_LocalInvocationIndex);
  const int k_begin = s * CHUNK, k_end = min(KK, k_begin + CHUNK);
  // Loads: A (weights): k column a_k of rows a_m + 16 j, j < 4 (16 neighbours read one row's 16
  // consecutive k). B (patches): pixel b_n of k rows b_k + 4 j (64 neighbours read 64
  // neighbouring pixels); the pixel is fixed, so its window origin is computed once.
  const int a_k = lid % BK, a_m = lid / BK;
  const int b_n = lid % BN, b_k = lid / BN;
  const int wrow = g * OCG + tm * BM + a_m;
  const int rows_left = OCG - tm * BM - a_m;
  const int pix = tn * BN + b_n;
  const bool pix_ok = pix < P;
  const int ih0 = (pix / OW) * SH - PH, iw0 = (pix % OW) * SW - PW;
  const int xbase = (n * IC + g * ICG) * IH * IW;
  // Arithmetic: rows 4 ty .. 4 ty + 3 x pixels 4 tx .. 4 tx + 3 of the tile.
  const int tx = lid % 16, ty = lid / 16;
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
  float ra[4], rb[4];
  load_step(k_begin, k_end, wrow, rows_left, a_k, b_k, pix_ok, ih0, iw0, xbase, ra, rb);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    for (int j = 0; j < 4; ++j) {
      int m = a_m + 16 * j;
      As[a_k][m >> 2][m & 3] = ra[j];
      Bs[b_k + 4 * j][b_n >> 2][b_n & 3] = rb[j];
    }
    barrier();
    if (k0 + BK < k_end) load_step(k0 + BK, k_end, wrow, rows_left, a_k, b_k, pix_ok, ih0, iw0, xbase, ra, rb);
    for (int kk = 0; kk < BK; ++kk) {
      vec4 av = As[kk][ty];
      vec4 bv = Bs[kk][tx];
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    barrier();
  }
  const int total = N * OC * P;
  for (int r = 0; r < 4; ++r) {
    int m = tm * BM + ty * 4 + r;
    if (m >= OCG) break;
    int oc = g * OCG + m;
    int row = (n * OC + oc) * P;
    for (int c = 0; c < 4; ++c) {
      int p = tn * BN + tx * 4 + c;
      if (p >= P) break;
      if (SPLITS == 1) {
        y[row + p] = FLOAT_T(epilogue(acc[r][c], oc, uint(row + p)));
      } else {
        partial[s * total + row + p] = acc[r][c];
      }
    }
  }
}

void main() {
  if (PHASE == 1) {
    const int total = N * OC * OH * OW;
    uint id = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    if (id >= uint(total)) return;
    float v = 0.0;
    for (int s = 0; s < SPLITS; ++s) v += partial[uint(s * total) + id];
    int oc = int(id / uint(OH * OW)) % OC;
    y[id] = FLOAT_T(epilogue(v, oc, id));
    return;
  }
  gemm();
}
