#version 450
#include "storage.glsl"
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// y[bt] = a[bt] (M x K) @ b[bt] (K x N, or N x K when TRANS_B) + bias, then clamp.
// A_BS / B_BS: batch strides in elements (0 broadcasts one matrix over all batches).
layout(constant_id = 1) const int BATCH = 1;
layout(constant_id = 2) const int M = 1;
layout(constant_id = 3) const int K = 1;
layout(constant_id = 4) const int N = 1;
layout(constant_id = 5) const int A_BS = 0;
layout(constant_id = 6) const int B_BS = 0;
layout(constant_id = 7) const int TRANS_B = 0;
layout(constant_id = 8) const int HAS_BIAS = 0;
layout(constant_id = 9) const int ACT = 0;
layout(constant_id = 10) const float ACT_MIN = 0.0;
layout(constant_id = 11) const float ACT_MAX = 0.0;
// TILED = 1 (chosen by the runtime for M >= 16): one 64-invocation workgroup per 32x32 output
// tile, operands staged through shared memory 16 k-steps at a time, 4x4 outputs per
// invocation. Loads are coalesced along each operand's contiguous dimension.
// TILED = 2 (the runtime's choice for linear layers with fewer rows, as in LLM decoding): 32
// invocations per output element reading consecutive weights of its row (coalesced: the weight
// matrix streams through once per row of x), summed in shared memory; see row_dot().
layout(constant_id = 12) const int TILED = 0;
layout(std430, set = 0, binding = 0) readonly buffer A { FLOAT_T a[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bm { FLOAT_T bm[]; };
layout(std430, set = 0, binding = 2) readonly buffer Bias { FLOAT_T bias[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { FLOAT_T y[]; };
const int TM = 32, TN = 32, TK = 16;
shared float As[TK][TM];
shared float Bs[TK][TN];

#include "conv_activation.glsl"

float epilogue(float v, int n) {
  if (HAS_BIAS != 0) v += float(bias[n]);
  return activation(v);
}

void tiled() {
  const int tiles_m = (M + TM - 1) / TM, tiles_n = (N + TN - 1) / TN;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(BATCH * tiles_m * tiles_n)) return;  // whole workgroup: no barrier is skipped
  int tn = int(wg % uint(tiles_n));
  int t = int(wg / uint(tiles_n));
  int tm = t % tiles_m;
  int bt = t / tiles_m;
  int lid = int(gl_LocalInvocationIndex);
  int tx = lid % 8, ty = lid / 8;
  int abase = bt * A_BS, bbase = bt * B_BS;
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
  for (int k0 = 0; k0 < K; k0 += TK) {
    for (int j = 0; j < 8; ++j) {
      int i = lid + 64 * j;
      int r = i / TK, kk = i % TK;
      int gm = tm * TM + r, gk = k0 + kk;
      As[kk][r] = (gm < M && gk < K) ? float(a[abase + gm * K + gk]) : 0.0;
      if (TRANS_B != 0) {
        int gn = tn * TN + r;
        Bs[kk][r] = (gn < N && gk < K) ? float(bm[bbase + gn * K + gk]) : 0.0;
      } else {
        int kb = i / TN, c = i % TN;
        int gn = tn * TN + c, gkb = k0 + kb;
        Bs[kb][c] = (gn < N && gkb < K) ? float(bm[bbase + gkb * N + gn]) : 0.0;
      }
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
    int gm = tm * TM + ty * 4 + r;
    if (gm >= M) break;
    for (int c = 0; c < 4; ++c) {
      int gn = tn * TN + tx * 4 + c;
      if (gn < N) y[(bt * M + gm) * N + gn] = FLOAT_T(epilogue(acc[r][c], gn));
    }
  }
}

// Row-dot (TILED = 2): WG / 32 outputs of one row of x per workgroup, 32 invocations each
// reading consecutive weights of their row; x staged in shared memory XCHUNK values at a time.
const int LANES = 32;
const int XCHUNK = 2048;
shared float xs[XCHUNK];
shared float partial[256];

void row_dot() {
  const int wg_size = int(gl_WorkGroupSize.x);
  const int rows = wg_size / LANES;
  const int row_groups = (N + rows - 1) / rows;
  uint wg = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (wg >= uint(BATCH * M * row_groups)) return;  // whole workgroup: no barrier is skipped
  int t = int(wg) / row_groups;
  int m = t % M;
  int bt = t / M;
  int lid = int(gl_LocalInvocationIndex);
  int lane = lid % LANES;
  int n = (int(wg) % row_groups) * rows + lid / LANES;
  int abase = bt * A_BS + m * K;
  int row = bt * B_BS + n * K;
  float acc = 0.0;
  for (int c0 = 0; c0 < K; c0 += XCHUNK) {
    int len = min(XCHUNK, K - c0);
    barrier();
    for (int i = lid; i < len; i += wg_size) xs[i] = float(a[abase + c0 + i]);
    barrier();
    if (n < N) {
      for (int k = lane; k < len; k += LANES) acc += xs[k] * float(bm[row + c0 + k]);
    }
  }
  partial[lid] = acc;
  barrier();
  for (int s = LANES / 2; s > 0; s >>= 1) {
    if (lane < s) partial[lid] += partial[lid + s];
    barrier();
  }
  if (lane == 0 && n < N) y[(bt * M + m) * N + n] = FLOAT_T(epilogue(partial[lid], n));
}

void main() {
  if (TILED == 1) {
    tiled();
    return;
  }
  if (TILED == 2) {
    row_dot();
    return;
  }
  uint id = linear_id();
  if (id >= uint(BATCH * M * N)) return;
  int n = int(id % uint(N));
  int t = int(id / uint(N));
  int m = t % M;
  int bt = t / M;
  int abase = bt * A_BS + m * K;
  int bbase = bt * B_BS;
  float acc = HAS_BIAS != 0 ? float(bias[n]) : 0.0;
  if (TRANS_B != 0) {
    int row = bbase + n * K;
    for (int k = 0; k < K; ++k) acc += float(a[abase + k]) * float(bm[row + k]);
  } else {
    for (int k = 0; k < K; ++k) acc += float(a[abase + k]) * float(bm[bbase + k * N + n]);
  }
  y[id] = FLOAT_T(activation(acc));
}
