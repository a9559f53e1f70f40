#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): float buffers hold float16_t; every load widens to
// fp32 and all arithmetic and accumulation stay fp32; only stores round to fp16.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define FLOAT_T float16_t
#else
#define FLOAT_T float
#endif
// Ember Vulkan delegate. One invocation per source element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// KV-cache update: rows t of src [B*HKV, T, D] go to cache [B*HKV, S, D] row pos[t]. The runtime
// checks every position lies in [0, S) before the run; one outside is skipped here regardless.
// HEADS > 0: src is stored token-major, [B, T, HEADS, D] (a folded transpose, dispatch_fusion.h).
// ROPE: what is stored is src rotated (rotate-half RoPE with rows cos/sin [TC, D], TC = T or 1),
// the RoPE feeding the attention's k computed here (dispatch_fusion.h).
layout(constant_id = 1) const int NUMEL = 1;
layout(constant_id = 2) const int T = 1;
layout(constant_id = 3) const int S = 1;
layout(constant_id = 4) const int D = 1;
layout(constant_id = 5) const int IDX64 = 1;
layout(constant_id = 6) const int HEADS = 0;
layout(constant_id = 7) const int ROPE = 0;
layout(constant_id = 8) const int TC = 1;
layout(std430, set = 0, binding = 0) readonly buffer Src { FLOAT_T src[]; };
layout(std430, set = 0, binding = 1) readonly buffer P { int pos[]; };
layout(std430, set = 0, binding = 2) readonly buffer C { FLOAT_T cosv[]; };
layout(std430, set = 0, binding = 3) readonly buffer Sn { FLOAT_T sinv[]; };
// The cache is the last binding: the runtime's barriers assume a shader writes only its last.
layout(std430, set = 0, binding = 4) buffer Cache { FLOAT_T cache[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(NUMEL)) return;
  int i = int(id);
  int d = i % D;
  int t = (i / D) % T;
  int bh = i / (D * T);
  int p = IDX64 != 0 ? pos[2 * t] : pos[t];
  if (IDX64 != 0 && pos[2 * t + 1] != 0) p = -1;
  if (p < 0 || p >= S) return;
  int at = HEADS > 0 ? ((bh / HEADS * T + t) * HEADS + bh % HEADS) * D + d : i;
  float v = float(src[at]);
  if (ROPE != 0) {
    const int half_d = D / 2, row = TC == 1 ? 0 : t;
    const float rot = d < half_d ? -float(src[at + half_d]) : float(src[at - half_d]);
    v = v * float(cosv[row * D + d]) + rot * float(sinv[row * D + d]);
  }
  cache[(bh * S + p) * D + d] = FLOAT_T(v);
}
