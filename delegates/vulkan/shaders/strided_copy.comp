#version 450
// STORAGE_FP16 (second SPIR-V, see BUILD): copies 16-bit elements (fp16 tensors) instead of
// 32-bit words.
#ifdef STORAGE_FP16
#extension GL_EXT_shader_16bit_storage : require
#define ELEM_T uint16_t
#else
#define ELEM_T uint
#endif
// Ember Vulkan delegate. One invocation per output element; the dispatch may be 2D when the
// element count exceeds the X workgroup-count limit (see linear_id()).
layout(local_size_x_id = 0) in;
uint linear_id() {
  return gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
}
// dst[dst_off + sum(i_d * ds[d])] = src[src_off + sum(i_d * ss[d])] over an index space of
// `sizes`: permute, slice, and each input of cat. Shapes come in push constants, so one
// pipeline serves every shape.
layout(push_constant) uniform Params {
  int rank; int numel; int src_off; int dst_off;
  int sizes[8]; int ss[8]; int ds[8];
} p;
layout(std430, set = 0, binding = 0) readonly buffer X { ELEM_T x[]; };
layout(std430, set = 0, binding = 1) buffer Y { ELEM_T y[]; };
void main() {
  uint id = linear_id();
  if (id >= uint(p.numel)) return;
  int rem = int(id);
  int is = p.src_off, id_ = p.dst_off;
  for (int d = p.rank - 1; d >= 0; --d) {
    int i = rem % p.sizes[d];
    rem /= p.sizes[d];
    is += i * p.ss[d];
    id_ += i * p.ds[d];
  }
  y[id_] = x[is];
}
