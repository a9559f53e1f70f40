#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): float buffers hold float16_t; every load widens to
// fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#else
#define FLOAT_T float
#endif
// Ember Vulkan delegate: attention over a KV cache. One 64-invocation workgroup per query row
// (b, h, t); the workgroup index may be 2D (x, y) when the rows exceed the X limit.
layout(local_size_x_id = 0) in;
// q [B, H, T, D]; caches [B, HKV, S, D]; query head h reads cache head h / (H / HKV). Row t
// attends to cache rows 0..pos[t] (causal by position): softmax(q . k_j * SCALE) . v_j.
layout(constant_id = 1) const int ROWS = 1;  // B * H * T
layout(constant_id = 2) const int H = 1;
layout(constant_id = 3) const int HKV = 1;
layout(constant_id = 4) const int T = 1;
layout(constant_id = 5) const int S = 1;
layout(constant_id = 6) const int D = 1;
layout(constant_id = 7) const int IDX64 = 1;
layout(constant_id = 8) const float SCALE = 1.0;
// Token-major layouts, [B, T, H, D] instead of [B, H, T, D] (transposes folded into this dispatch,
// runtime/dispatch_fusion.h): Q_TOKEN_MAJOR for q, Y_TOKEN_MAJOR for the output.
layout(constant_id = 9) const int Q_TOKEN_MAJOR = 0;
layout(constant_id = 10) const int Y_TOKEN_MAJOR = 0;
// ROPE_Q: the query row is rotated as it is loaded (rotate-half RoPE, rows cos/sin [TC, D], TC =
// T or 1): the RoPE feeding q, computed here (dispatch_fusion.h).
layout(constant_id = 11) const int ROPE_Q = 0;
layout(constant_id = 12) const int TC = 1;
layout(std430, set = 0, binding = 0) readonly buffer Q { FLOAT_T q[]; };
layout(std430, set = 0, binding = 1) readonly buffer K { FLOAT_T kc[]; };
layout(std430, set = 0, binding = 2) readonly buffer V { FLOAT_T vc[]; };
layout(std430, set = 0, binding = 3) readonly buffer P { int pos[]; };
layout(std430, set = 0, binding = 4) readonly buffer C { FLOAT_T cosv[]; };
layout(std430, set = 0, binding = 5) readonly buffer Sn { FLOAT_T sinv[]; };
layout(std430, set = 0, binding = 6) writeonly buffer Y { FLOAT_T y[]; };
shared float scores[S];
shared float qrow[D];
shared float red[64];

float wg_reduce(float v, bool take_max) {
  uint lid = gl_LocalInvocationIndex;
  red[lid] = v;
  barrier();
  for (uint s = 32u; s > 0u; s >>= 1) {
    if (lid < s) red[lid] = take_max ? max(red[lid], red[lid + s]) : red[lid] + red[lid + s];
    barrier();
  }
  float r = red[0];
  barrier();
  return r;
}

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= uint(ROWS)) return;  // whole workgroup: no barrier is skipped
  int r = int(row);
  int lid = int(gl_LocalInvocationIndex);
  int t = r % T;
  int h = (r / T) % H;
  int b = r / (T * H);
  int g = h / (H / HKV);
  int p = IDX64 != 0 ? pos[2 * t] : pos[t];
  if (IDX64 != 0 && pos[2 * t + 1] != 0) p = -1;
  int n = (p >= 0 && p < S) ? p + 1 : 0;
  int cache = (b * HKV + g) * S * D;
  const int token_major_row = ((b * T + t) * H + h) * D;
  const int q_at = Q_TOKEN_MAJOR != 0 ? token_major_row : r * D;
  const int y_at = Y_TOKEN_MAJOR != 0 ? token_major_row : r * D;
  for (int d = lid; d < D; d += 64) {
    float v = float(q[q_at + d]);
    if (ROPE_Q != 0) {
      const int half_d = D / 2, c = (TC == 1 ? 0 : t) * D + d;
      const float rot = d < half_d ? -float(q[q_at + d + half_d]) : float(q[q_at + d - half_d]);
      v = v * float(cosv[c]) + rot * float(sinv[c]);
    }
    qrow[d] = v;
  }
  barrier();
  float m = -3.402823e38;
  for (int j = lid; j < n; j += 64) {
    float acc = 0.0;
    for (int d = 0; d < D; ++d) acc += qrow[d] * float(kc[cache + j * D + d]);
    acc *= SCALE;
    scores[j] = acc;
    m = max(m, acc);
  }
  float mx = wg_reduce(m, true);
  float l = 0.0;
  for (int j = lid; j < n; j += 64) {
    float e = exp(scores[j] - mx);
    scores[j] = e;
    l += e;
  }
  float sum = wg_reduce(l, false);
  float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  for (int d = lid; d < D; d += 64) {
    float acc = 0.0;
    for (int j = 0; j < n; ++j) acc += scores[j] * float(vc[cache + j * D + d]);
    y[y_at + d] = FLOAT_T(acc * inv);
  }
}
