#version 450
#include "storage.glsl"
#extension GL_EXT_control_flow_attributes : require
#ifdef COOP_MATRIX
// The matrix-unit variant (BUILD: conv2d_gemm_coop_fp16, fp16 storage only; used where the
// device offers VK_NV_cooperative_matrix with 16x16x16 fp16 x fp16 + fp32 on 32-wide subgroups,
// runtime/graph_lowering.h): the k-step tiles are staged in shared memory as fp16 and multiplied
// by the subgroups' matrix units into fp32 accumulators; loads, split, epilogue as below.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
// Ember Vulkan delegate. 2-D convolution (NCHW, groups, fused bias, activation, residual) as an
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
// IN_SCALE 1: X's channels are scaled by S[n, c] as they are read (a squeeze-and-excitation
// multiply fused in); IN_SCALE 2: S holds the pooled means p[n, c] and each workgroup first
// computes the excitation act2(fc2(act1(fc1(p)))) of its k range's channels itself (groups 1);
// IN_SCALE 3: S holds act1(fc1(p)) and the workgroups compute act2(fc2(.)).
// The runtime picks SPLITS so that deep reductions over few outputs (ResNet's 7x7x512 layers:
// 8 tiles) still fill the GPU, and CHUNK (a multiple of 16) as the k range of one split.
// Only what shapes the inner loop is specialised (the window's size, PHASE, ROWS_MAJOR,
// IN_SCALE); the sizes, strides, padding, dilation, the split and the epilogue (bias,
// activation, residual) are push constants, so a network's convolutions share a few pipelines:
// each costs tens of ms to compile, and a pipeline per layer and epilogue made a first load
// 1.5-2x slower (H200; sizes as specialisation constants ran ~5% faster). The runtime fills the
// push constants from the dispatch's specialisation values (gemm_lowering.cc), ids 1-7, 10-22
// and 24 below.
layout(local_size_x_id = 0) in;  // 256 (the tile layout below assumes it)
layout(push_constant) uniform Params {
  int n, ic, ih, iw, oc, oh, ow, groups, splits, chunk, has_bias, act;
  float act_min, act_max;
  int has_residual, sh, sw, ph, pw, dh, dw;
  int ex_hidden, ex_act1;  // IN_SCALE 2 / 3: fc1's outputs (<= 256) and activations
  float ex_min1, ex_max1;
  int ex_act2;
  float ex_min2, ex_max2;
} pc;
#define N pc.n
#define IC pc.ic
#define IH pc.ih
#define IW pc.iw
#define OC pc.oc
#define OH pc.oh
#define OW pc.ow
#define G pc.groups
#define SPLITS pc.splits
#define CHUNK pc.chunk
#define HAS_BIAS pc.has_bias
#define ACT pc.act
#define ACT_MIN pc.act_min
#define ACT_MAX pc.act_max
#define HAS_RESIDUAL pc.has_residual
layout(constant_id = 8) const int KH = 1;
layout(constant_id = 9) const int KW = 1;
#define SH pc.sh  // constant_id 10 .. 15 of the dispatch, pushed
#define SW pc.sw
#define PH pc.ph
#define PW pc.pw
#define DH pc.dh
#define DW pc.dw
layout(constant_id = 23) const int PHASE = 0;
// ROWS_MAJOR (a linear layer, y[M, OC] = x[M, IC] . w[OC, IC]^T + b, as a 1x1 convolution of
// one image of OH = M pixels, IH = M, IW = OW = 1): X is read and Y written row-major.
layout(constant_id = 25) const int ROWS_MAJOR = 0;
layout(constant_id = 26) const int IN_SCALE = 0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { FLOAT_T w[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { FLOAT_T b[]; };
layout(std430, set = 0, binding = 3) readonly buffer R { FLOAT_T residual[]; };
// IN_SCALE: X's channels scaled as they are read (x[n, c, :, :] * s[n, c]): a preceding
// squeeze-and-excitation multiply fused into the convolution (runtime/dispatch_fusion.h).
layout(std430, set = 0, binding = 4) readonly buffer S { FLOAT_T in_scale[]; };
// IN_SCALE 2: fc1 [ex_hidden, IC] and its bias (IN_SCALE 3: unused), fc2 [IC, ex_hidden] and its bias.
layout(std430, set = 0, binding = 5) readonly buffer E1 { FLOAT_T ex_w1[]; };
layout(std430, set = 0, binding = 6) readonly buffer EB1 { FLOAT_T ex_b1[]; };
layout(std430, set = 0, binding = 7) readonly buffer E2 { FLOAT_T ex_w2[]; };
layout(std430, set = 0, binding = 8) readonly buffer EB2 { FLOAT_T ex_b2[]; };
// Partial sums stay fp32 in fp16-storage programs too.
layout(std430, set = 0, binding = 9) buffer Partial { float partial[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Y { FLOAT_T y[]; };

// The matrix units' k step (BUILD's comment has the measurement; -DCOOP_BK=16 / 64 to measure).
#ifndef COOP_BK
#define COOP_BK 32
#endif
#ifdef COOP_MATRIX
const int BM = 64, BN = 64, BK = COOP_BK;  // the matrix units make arithmetic cheap: deeper steps, fewer barriers
#else
const int BM = 64, BN = 64, BK = 16;
#endif
// Per invocation and k step: LOADS values of A and of B; A's rows (and row-major B's pixels) of
// one invocation are ASTEP apart.
const int LOADS = BM * BK / 256, ASTEP = 256 / BK;
#ifdef COOP_MATRIX
// A row-major [BM][BK] (weights' k contiguous), B [BK][BN] (pixels contiguous), the finished
// tile [BM][BN] in fp32; row strides padded to 16-byte multiples (the matrix loads' alignment).
const int AS = BK + 8, BS = BN + 8, CS = BN + 4;
shared float16_t Ah[BM * AS];
shared float16_t Bh[BK * BS];
shared float Cf[BM * CS];  // 27 KB of shared memory in all with 32-deep steps (kConvGemmCoopSharedBytes)
#define TILE(mm, pp) Cf[(mm) * CS + (pp)]
#define EXCITE_SLOT(i) Cf[i]
#else
// k-major tiles, rows padded by one vec4 so the transposing stores spread over the banks.
shared vec4 As[BK][BM / 4 + 1];
shared vec4 Bs[BK][BN / 4 + 1];
shared vec4 Cs[BM][BN / 4 + 1];  // the finished tile, for the epilogue (25 KB of shared memory in all)
#define TILE(mm, pp) Cs[mm][(pp) >> 2][(pp) & 3]
#define EXCITE_SLOT(i) Cs[(i) / 68][((i) % 68) >> 2][(i) & 3]
#endif
// IN_SCALE 2 / 3 keep their scales in the finished tile's storage (free until the epilogue; 4352
// floats either way): slots 0 .. 4095 the k range's channels, 4096 .. 4351 fc1's outputs.
const int kExciteHidden = 4096;
int g_c_first = 0;  // IN_SCALE 2 / 3: the channel of EXCITE_SLOT(0)

#include "conv_activation.glsl"

// Output element `id` (channel oc) from its sum.
float epilogue(float v, int oc, uint id) {
  if (HAS_BIAS != 0) v += float(b[oc]);
  if (HAS_RESIDUAL != 0) v += float(residual[id]);
  return activation(v);
}

// B's element (k, pixel) for one image: the input patch value (zero padding), or with
// ROWS_MAJOR the row-major [pixels, K] matrix's (linear layers).
// sbase: the image's (and group's) first channel, for IN_SCALE.
float patch_value(int gk, int pix, int ih0, int iw0, int xbase, int sbase) {
  if (ROWS_MAJOR != 0) return float(x[xbase + pix * IC + gk]);
  const int KHW = KH * KW;
  int ic = gk / KHW, r = gk - ic * KHW;
  int kh = r / KW, kw = r - kh * KW;
  int ih = ih0 + kh * DH, iw = iw0 + kw * DW;
  if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) return 0.0;
  float v = float(x[xbase + (ic * IH + ih) * IW + iw]);
  if (IN_SCALE >= 2) return v * EXCITE_SLOT(ic - g_c_first);
  return IN_SCALE != 0 ? v * float(in_scale[sbase + ic]) : v;
}

// IN_SCALE 2 / 3: image n's excitation of channels c_first .. c_first + count - 1 into
// EXCITE_SLOT(0 ..) (runtime/dispatch_fusion.h). IN_SCALE 2 computes fc1 from the pooled means
// in_scale[n * IC ..] (T = 256 / ex_hidden invocations per output, partial sums through the
// slots); IN_SCALE 3 reads fc1's activated outputs from in_scale[n * ex_hidden ..] (fc1 ran in
// its own dispatch). Then fc2, one channel per invocation. Loops keep four independent sums so
// several loads are in flight. No subgroup operations (every Vulkan 1.1 device runs it).
void excite(int n, int c_first, int count) {
  const int H = pc.ex_hidden, lid = int(gl_LocalInvocationIndex);
  if (IN_SCALE == 2) {
    const int T = max(1, 256 / H);
    vec4 acc = vec4(0.0);
    if (lid < H * T) {
      const int j = lid / T, wrow = j * IC, prow = n * IC;
      int c = lid % T;
      for (; c + 3 * T < IC; c += 4 * T) {
        acc.x += float(ex_w1[wrow + c]) * float(in_scale[prow + c]);
        acc.y += float(ex_w1[wrow + c + T]) * float(in_scale[prow + c + T]);
        acc.z += float(ex_w1[wrow + c + 2 * T]) * float(in_scale[prow + c + 2 * T]);
        acc.w += float(ex_w1[wrow + c + 3 * T]) * float(in_scale[prow + c + 3 * T]);
      }
      for (; c < IC; c += T) acc.x += float(ex_w1[wrow + c]) * float(in_scale[prow + c]);
    }
    EXCITE_SLOT(lid) = (acc.x + acc.y) + (acc.z + acc.w);
    barrier();
    if (lid < H) {
      float h = float(ex_b1[lid]);
      for (int t = 0; t < T; ++t) h += EXCITE_SLOT(lid * T + t);
      EXCITE_SLOT(kExciteHidden + lid) = activation_of(pc.ex_act1, h, pc.ex_min1, pc.ex_max1);
    }
  } else if (lid < H) {
    EXCITE_SLOT(kExciteHidden + lid) = float(in_scale[n * H + lid]);
  }
  barrier();
  for (int i = lid; i < count; i += 256) {
    const int c = c_first + i, wrow = c * H;
    vec4 v = vec4(float(ex_b2[c]), 0.0, 0.0, 0.0);
    int j = 0;
    for (; j + 3 < H; j += 4) {
      v.x += float(ex_w2[wrow + j]) * EXCITE_SLOT(kExciteHidden + j);
      v.y += float(ex_w2[wrow + j + 1]) * EXCITE_SLOT(kExciteHidden + j + 1);
      v.z += float(ex_w2[wrow + j + 2]) * EXCITE_SLOT(kExciteHidden + j + 2);
      v.w += float(ex_w2[wrow + j + 3]) * EXCITE_SLOT(kExciteHidden + j + 3);
    }
    for (; j < H; ++j) v.x += float(ex_w2[wrow + j]) * EXCITE_SLOT(kExciteHidden + j);
    EXCITE_SLOT(i) = activation_of(pc.ex_act2, (v.x + v.y) + (v.z + v.w), pc.ex_min2, pc.ex_max2);
  }
  barrier();
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
  if (IN_SCALE >= 2) {
    g_c_first = k_begin / (KH * KW);
    excite(n, g_c_first, (k_end - 1) / (KH * KW) - g_c_first + 1);
  }
  // Loads, LOADS of A and of B per invocation and k step (4; 8 with 32-deep steps). A (weights,
  // [OC, K] row-major): k column a_k of rows a_m + ASTEP j (BK neighbours read one row's BK
  // consecutive k). B: patches (NCHW input): pixel b_n of k rows b_k + 4 j, 64 neighbours reading
  // 64 neighbouring pixels, the window origin computed once; row-major B: like A, k column b_k of
  // pixels b_n + ASTEP j.
  const int a_k = lid % BK, a_m = lid / BK;
  const int b_k = ROWS_MAJOR != 0 ? lid % BK : lid / BN;
  const int b_n = ROWS_MAJOR != 0 ? lid / BK : lid % BN;
  const int b_kstep = ROWS_MAJOR != 0 ? 0 : 256 / BN, b_nstep = ROWS_MAJOR != 0 ? ASTEP : 0;
  const int wrow = g * OCG + tm * BM + a_m;
  const int rows_left = OCG - tm * BM - a_m;
  const int sbase = n * IC + g * ICG, xbase = sbase * IH * IW;
  int ih0[LOADS], iw0[LOADS];
  bool pix_ok[LOADS];
  for (int j = 0; j < LOADS; ++j) {
    const int pix = tn * BN + b_n + b_nstep * j;
    pix_ok[j] = pix < P;
    ih0[j] = (pix / OW) * SH - PH;
    iw0[j] = (pix % OW) * SW - PW;
  }
#ifdef COOP_MATRIX
  // Arithmetic: subgroup sg (8 of 32 invocations) owns rows 16 (sg / 2) .. + 15 x pixels
  // 32 (sg % 2) .. + 31 of the tile: two 16x16 accumulators.
  const int sg = int(gl_SubgroupID), fm = sg >> 1, fn = (sg & 1) * 2;
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc1 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#else
  // Arithmetic: rows 4 ty .. 4 ty + 3 x pixels 4 tx .. 4 tx + 3 of the tile.
  const int tx = lid % 16, ty = lid / 16;
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
#endif
  float ra[LOADS], rb[LOADS];
  // Step k0's tiles are computed while step k0 + BK's loads are in flight; one load site (the
  // first pass only loads), which keeps the pipeline small.
  for (int k0 = k_begin - BK; k0 < k_end; k0 += BK) {
    const int k1 = k0 + BK;
    const bool more = k1 < k_end;
    if (more) {
      for (int j = 0; j < LOADS; ++j) {
        const int ak = k1 + a_k, bk = k1 + b_k + b_kstep * j;
        ra[j] = (ASTEP * j < rows_left && ak < k_end) ? float(w[(wrow + ASTEP * j) * KK + ak]) : 0.0;
        rb[j] = (pix_ok[j] && bk < k_end) ? patch_value(bk, tn * BN + b_n + b_nstep * j, ih0[j], iw0[j], xbase, sbase) : 0.0;
      }
    }
#ifdef COOP_MATRIX
    if (k0 >= k_begin) {
      [[unroll]] for (int kk = 0; kk < BK; kk += 16) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b0, b1;
        coopMatLoadNV(a, Ah, uint(fm * 16 * AS + kk), uint(AS), false);
        coopMatLoadNV(b0, Bh, uint(kk * BS + fn * 16), uint(BS), false);
        coopMatLoadNV(b1, Bh, uint(kk * BS + fn * 16 + 16), uint(BS), false);
        acc0 = coopMatMulAddNV(a, b0, acc0);
        acc1 = coopMatMulAddNV(a, b1, acc1);
      }
    }
#else
    if (k0 >= k_begin) {
      for (int kk = 0; kk < BK; ++kk) {
        vec4 av = As[kk][ty];
        vec4 bv = Bs[kk][tx];
        acc[0] += av.x * bv;
        acc[1] += av.y * bv;
        acc[2] += av.z * bv;
        acc[3] += av.w * bv;
      }
    }
#endif
    barrier();
    if (more) {
      for (int j = 0; j < LOADS; ++j) {
        const int m = a_m + ASTEP * j, bn = b_n + b_nstep * j;
#ifdef COOP_MATRIX
        Ah[m * AS + a_k] = float16_t(ra[j]);
        Bh[(b_k + b_kstep * j) * BS + bn] = float16_t(rb[j]);
#else
        As[a_k][m >> 2][m & 3] = ra[j];
        Bs[b_k + b_kstep * j][bn >> 2][bn & 3] = rb[j];
#endif
      }
    }
    barrier();
  }
  // The tile goes through shared memory, then each invocation writes every 256th element with
  // one (not unrolled) epilogue: neighbours write neighbours (pixels, or with ROWS_MAJOR output
  // channels), and the pipeline stays small (the epilogue's activations are push constants).
#ifdef COOP_MATRIX
  coopMatStoreNV(acc0, Cf, uint(fm * 16 * CS + fn * 16), uint(CS), false);
  coopMatStoreNV(acc1, Cf, uint(fm * 16 * CS + fn * 16 + 16), uint(CS), false);
#else
  for (int r = 0; r < 4; ++r) Cs[ty * 4 + r][tx] = acc[r];
#endif
  barrier();
  const int total = N * OC * P;
  [[dont_unroll]] for (int e = lid; e < BM * BN; e += 256) {
    const int mm = ROWS_MAJOR != 0 ? e % BM : e / BN, pp = ROWS_MAJOR != 0 ? e / BM : e % BN;
    const int m = tm * BM + mm, p = tn * BN + pp;
    if (m >= OCG || p >= P) continue;
    const int oc = g * OCG + m;
    // NCHW output, or with ROWS_MAJOR [pixels, OC] (a linear layer's [rows, outputs]).
    const int id = ROWS_MAJOR != 0 ? p * OC + oc : (n * OC + oc) * P + p;
    const float v = TILE(mm, pp);
    if (SPLITS == 1) {
      y[id] = FLOAT_T(epilogue(v, oc, uint(id)));
    } else {
      partial[s * total + id] = v;
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
    int oc = ROWS_MAJOR != 0 ? int(id % uint(OC)) : int(id / uint(OH * OW)) % OC;
    y[id] = FLOAT_T(epilogue(v, oc, id));
    return;
  }
  gemm();
}
