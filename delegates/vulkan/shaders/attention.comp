#version 450
#include "storage.glsl"
// Ember Vulkan delegate: attention over a KV cache, with the cache update in the same dispatch.
// One workgroup per query row (b, h, t) of NT invocations (the host's choice, a power of two
// from 64 to 1024); the workgroup index may be 2D (x, y) when the rows exceed the X limit. A decode
// has few rows (one per head) and reads the whole cache, so the work inside a row is spread over
// every invocation: KS invocations per cache row for the scores, NT / D row partitions per
// output element for the weighted sum of the values.
#include "rotate_half.glsl"
layout(local_size_x_id = 0) in;
// q [B, H, T, D]; the new keys and values k, v [B, HKV, T, D]; caches [B, HKV, S, D]; query head
// h reads cache head h / (H / HKV). Token t' of this call goes to cache row pos[t']. Row t
// attends to rows 0..pos[t] (causal by position) of the cache as it is after the update:
// softmax(q . k_j * SCALE) . v_j, where a row j that some token t' of this call writes is read
// from k / v (the last such t'), not from the cache, so no row is read and written in one
// dispatch. The workgroups of each cache head's first query head store their token's k and v
// row in the cache (rows the others only read from k / v), which the next call reads.
layout(constant_id = 1) const int ROWS = 1;  // B * H * T
layout(constant_id = 2) const int H = 1;
layout(constant_id = 3) const int HKV = 1;
layout(constant_id = 4) const int T = 1;
layout(constant_id = 5) const int S = 1;
layout(constant_id = 6) const int D = 1;
layout(constant_id = 7) const int IDX64 = 1;
layout(constant_id = 8) const float SCALE = 1.0;
// Token-major layouts, [B, T, heads, D] instead of [B, heads, T, D] (transposes folded into this
// dispatch, runtime/dispatch_fusion.h): Q_TOKEN_MAJOR for q, Y_TOKEN_MAJOR for the output,
// K_TOKEN_MAJOR / V_TOKEN_MAJOR for the new keys and values.
layout(constant_id = 9) const int Q_TOKEN_MAJOR = 0;
layout(constant_id = 10) const int Y_TOKEN_MAJOR = 0;
// ROPE_Q / ROPE_K: q / the new keys are rotated as they are loaded (rotate-half RoPE, rows cos/sin
// [TC, D], TC = T or 1): the RoPEs feeding the attention, computed here (dispatch_fusion.h).
layout(constant_id = 11) const int ROPE_Q = 0;
layout(constant_id = 12) const int TC = 1;  // q's cos/sin rows
layout(constant_id = 13) const int K_TOKEN_MAJOR = 0;
layout(constant_id = 14) const int V_TOKEN_MAJOR = 0;
layout(constant_id = 15) const int ROPE_K = 0;
layout(constant_id = 16) const int TCK = 1;  // the keys' cos/sin rows
layout(std430, set = 0, binding = 0) readonly buffer Q { FLOAT_T q[]; };
layout(std430, set = 0, binding = 1) readonly buffer KN { FLOAT_T knew[]; };
layout(std430, set = 0, binding = 2) readonly buffer VN { FLOAT_T vnew[]; };
layout(std430, set = 0, binding = 3) readonly buffer P { int pos[]; };
layout(std430, set = 0, binding = 4) readonly buffer C { FLOAT_T cosv[]; };
layout(std430, set = 0, binding = 5) readonly buffer Sn { FLOAT_T sinv[]; };
layout(std430, set = 0, binding = 6) readonly buffer CK { FLOAT_T kcos[]; };
layout(std430, set = 0, binding = 7) readonly buffer SK { FLOAT_T ksin[]; };
// The outputs are the last bindings (shader_library.h: the runtime's barriers rely on it).
layout(std430, set = 0, binding = 8) buffer KC { FLOAT_T kc[]; };
layout(std430, set = 0, binding = 9) buffer VC { FLOAT_T vc[]; };
layout(std430, set = 0, binding = 10) writeonly buffer Y { FLOAT_T y[]; };
const int KS = 4;  // invocations per cache row's score, each a quarter of its elements
shared float scores[S];
shared float red[gl_WorkGroupSize.x];  // reductions and partial sums

// The sum (or max) of v over the workgroup, in two levels of shared memory rather than a tree:
// NT / 16 invocations each combine 16 values, then every invocation combines those NT / 16
// partials itself (reads of one address are broadcasts). Three barriers where a tree takes
// log2(NT) + 2 (11 at 512 invocations, each a few hundred cycles when a decode step's whole
// attention is one workgroup per head).
const uint FAN_IN = 16u;  // NT is a power of two >= 64
float wg_reduce(float v, bool take_max) {
  const uint lid = gl_LocalInvocationIndex, parts = gl_WorkGroupSize.x / FAN_IN;
  red[lid] = v;
  barrier();
  if (lid < parts) {
    float a = red[lid];
    for (uint i = 1u; i < FAN_IN; ++i) a = take_max ? max(a, red[lid + i * parts]) : a + red[lid + i * parts];
    red[lid] = a;  // only this invocation reads red[lid] and red[lid + i * parts], i >= 1
  }
  barrier();
  float r = red[0];
  for (uint i = 1u; i < parts; ++i) r = take_max ? max(r, red[i]) : r + red[i];
  barrier();
  return r;
}

// Token t's cache row, or -1 (an int64 position outside int32, which the runtime refuses
// before the run anyway).
int position(int t) {
  if (IDX64 == 0) return pos[t];
  return pos[2 * t + 1] != 0 ? -1 : pos[2 * t];
}

int b, g, first_pos;
bool consecutive;  // positions first_pos, first_pos + 1, ...: the usual case, no search

// The last token of this call that writes cache row j, or -1.
int newest(int j) {
  if (consecutive) return j >= first_pos && j < first_pos + T ? j - first_pos : -1;
  for (int u = T - 1; u >= 0; --u)
    if (position(u) == j) return u;
  return -1;
}

// Where token u's row of the new keys / values starts.
int new_row(int u, int token_major) {
  return token_major != 0 ? ((b * T + u) * HKV + g) * D : ((b * HKV + g) * T + u) * D;
}

// Element d of token u's new key (rotated with ROPE_K), its row starting at `at`.
float new_key(int at, int u, int d) {
  float v = float(knew[at + d]);
  if (ROPE_K != 0) {
    const int half_d = D / 2, c = (TCK == 1 ? 0 : u) * D + d;
    const bool first = d < half_d;
    v = rotate_half(v, float(knew[at + (first ? d + half_d : d - half_d)]), first, float(kcos[c]), float(ksin[c]));
  }
  return v;
}

shared float qrow[D];

// Invocation kq's share of q . (token u's new key, rotated with ROPE_K), its row starting at
// `at`: elements kq, kq + KS, ...; with RoPE, pairs (d, d + D / 2) from d = kq on (each pair's
// two loads serve both).
float new_key_dot(int at, int u, int kq) {
  float acc = 0.0;
  if (ROPE_K == 0) {
    for (int d = kq; d < D; d += KS) acc += qrow[d] * float(knew[at + d]);
    return acc;
  }
  const int half_d = D / 2, c = (TCK == 1 ? 0 : u) * D;
  for (int d = kq; d < half_d; d += KS) {
    const float k1 = float(knew[at + d]), k2 = float(knew[at + d + half_d]);
    acc += qrow[d] * rotate_half(k1, k2, true, float(kcos[c + d]), float(ksin[c + d]));
    acc += qrow[d + half_d] * rotate_half(k2, k1, false, float(kcos[c + d + half_d]), float(ksin[c + d + half_d]));
  }
  return acc;
}

void main() {
  uint row = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (row >= uint(ROWS)) return;  // whole workgroup: no barrier is skipped
  int r = int(row);
  int lid = int(gl_LocalInvocationIndex);
  const int NT = int(gl_WorkGroupSize.x);
  int t = r % T;
  int h = (r / T) % H;
  b = r / (T * H);
  g = h / (H / HKV);
  first_pos = position(0);
  // Whether this call's positions are consecutive: a short call's (a decode step's) read by every
  // invocation, a long one's shared out and reduced.
  float breaks = 0.0;
  for (int u = T <= 32 ? 0 : lid; u < T; u += T <= 32 ? 1 : NT)
    if (first_pos < 0 || position(u) != first_pos + u) breaks += 1.0;
  consecutive = (T <= 32 ? breaks : wg_reduce(breaks, false)) == 0.0;
  int p = position(t);
  int n = (p >= 0 && p < S) ? p + 1 : 0;
  int cache = (b * HKV + g) * S * D;
  const int k_row = new_row(t, K_TOKEN_MAJOR), v_row = new_row(t, V_TOKEN_MAJOR);
  // The cache update: this token's row, by the first query head of the cache head, unless a
  // later token of the call writes the same row.
  if (h % (H / HKV) == 0 && n > 0 && newest(p) == t) {
    for (int d = lid; d < D; d += NT) {
      kc[cache + p * D + d] = FLOAT_T(new_key(k_row, t, d));
      vc[cache + p * D + d] = vnew[v_row + d];
    }
  }
  const int token_major_row = ((b * T + t) * H + h) * D;
  const int q_at = Q_TOKEN_MAJOR != 0 ? token_major_row : r * D;
  const int y_at = Y_TOKEN_MAJOR != 0 ? token_major_row : r * D;
  for (int d = lid; d < D; d += NT) {
    float v = float(q[q_at + d]);
    if (ROPE_Q != 0) {
      const int half_d = D / 2, c = (TC == 1 ? 0 : t) * D + d;
      const bool first = d < half_d;
      v = rotate_half(v, float(q[q_at + (first ? d + half_d : d - half_d)]), first, float(cosv[c]), float(sinv[c]));
    }
    qrow[d] = v;
  }
  barrier();
  // Rows [0, cached) are in the cache and none of them is new (with consecutive positions, the
  // rows before this call's); rows [cached, n) may be new. Separate loops without a choice per
  // row, so the compiler keeps many rows' loads in flight (a branch per row of a decode's long
  // cache made the attention several times slower on an H200).
  const int cached = consecutive ? min(n, first_pos) : 0;
  // Scores, NT / KS rows a round: invocation kq of a row takes its elements kq, kq + KS, ...
  // (a new row's key rotated on the fly); the row's first invocation adds the KS partial sums.
  const int kq = lid % KS, rows_per_round = NT / KS;
  float m = -3.402823e38;
  for (int j0 = 0; j0 < n; j0 += rows_per_round) {
    const int j = j0 + lid / KS;
    float acc = 0.0;
    if (j < cached) {
      for (int d = kq; d < D; d += KS) acc += qrow[d] * float(kc[cache + j * D + d]);
    } else if (j < n) {
      const int u = consecutive ? j - first_pos : newest(j);  // consecutive: every row from `cached` is new
      if (u < 0) {
        for (int d = kq; d < D; d += KS) acc += qrow[d] * float(kc[cache + j * D + d]);
      } else {
        acc = new_key_dot(new_row(u, K_TOKEN_MAJOR), u, kq);
      }
    }
    red[lid] = acc;
    barrier();
    if (kq == 0 && j < n) {
      float dot_j = 0.0;
      for (int i = 0; i < KS; ++i) dot_j += red[lid + i];
      dot_j *= SCALE;
      scores[j] = dot_j;
      m = max(m, dot_j);
    }
    barrier();
  }
  float mx = wg_reduce(m, true);
  float l = 0.0;
  for (int j = lid; j < n; j += NT) {
    float e = exp(scores[j] - mx);
    scores[j] = e;
    l += e;
  }
  float sum = wg_reduce(l, false);
  float inv = sum > 0.0 ? 1.0 / sum : 0.0;
  // The weighted sum of the values: DC output elements a pass (all D when D <= NT), each by JS
  // invocations that take rows part, part + JS, ... (neighbouring invocations, neighbouring
  // elements of one row: coalesced); the first adds the JS partial sums.
  const int DC = min(D, NT), JS = NT / DC, part = lid / DC;
  for (int d0 = 0; d0 < D; d0 += DC) {
    const int d = d0 + lid % DC;
    float acc = 0.0;
    if (part < JS && d < D) {
      for (int j = part; j < cached; j += JS) acc += scores[j] * float(vc[cache + j * D + d]);
      if (consecutive) {
        for (int j = cached + part; j < n; j += JS) acc += scores[j] * float(vnew[new_row(j - first_pos, V_TOKEN_MAJOR) + d]);
      } else {
        for (int j = cached + part; j < n; j += JS) {
          const int u = newest(j);
          if (u < 0) {
            acc += scores[j] * float(vc[cache + j * D + d]);
          } else {
            acc += scores[j] * float(vnew[new_row(u, V_TOKEN_MAJOR) + d]);
          }
        }
      }
    }
    red[lid] = acc;
    barrier();
    if (part == 0 && d < D) {
      float v = 0.0;
      for (int i = 0; i < JS; ++i) v += red[lid + i * DC];
      y[y_at + d] = FLOAT_T(v * inv);
    }
    barrier();
  }
}
