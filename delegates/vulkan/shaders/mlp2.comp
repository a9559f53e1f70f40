#version 450
#include "storage.glsl"
// Ember Vulkan delegate: two small linear layers in one dispatch, the hidden row kept in shared
// memory: y[m] = act(W2 . act1(W1 . x[m] + b1) + b2), x [M, K], W1 [R, K], W2 [N, R] (row-major,
// as nn.Linear's). A squeeze-and-excitation block's squeeze and excite (1x1 convolutions of a
// pooled 1x1 image, runtime/dispatch_fusion.h: mlp_first) took two dispatches and a barrier.
// One 256-invocation workgroup per row m: x[m] is staged in shared memory; each warp-sized group
// of 32 invocations computes one hidden value at a time (consecutive weights, summed in shared
// memory); then each invocation computes outputs n, n + 256, ... from its weight row of R.
layout(local_size_x_id = 0) in;  // 256
layout(constant_id = 1) const int M = 1;
layout(constant_id = 2) const int K = 1;
layout(constant_id = 3) const int R = 1;
layout(constant_id = 4) const int N = 1;
layout(constant_id = 5) const int HAS_B1 = 0;
layout(constant_id = 6) const int ACT1 = 0;  // conv_activation.glsl's codes
layout(constant_id = 7) const float ACT1_MIN = 0.0;
layout(constant_id = 8) const float ACT1_MAX = 0.0;
layout(constant_id = 9) const int HAS_BIAS = 0;
layout(constant_id = 10) const int ACT = 0;  // the output's (an activation fused after it)
layout(constant_id = 11) const float ACT_MIN = 0.0;
layout(constant_id = 12) const float ACT_MAX = 0.0;
layout(std430, set = 0, binding = 0) readonly buffer X { FLOAT_T x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W1 { FLOAT_T w1[]; };
layout(std430, set = 0, binding = 2) readonly buffer B1 { FLOAT_T b1[]; };
layout(std430, set = 0, binding = 3) readonly buffer W2 { FLOAT_T w2[]; };
layout(std430, set = 0, binding = 4) readonly buffer B2 { FLOAT_T b2[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { FLOAT_T y[]; };
const int LANES = 32, GROUPS = 256 / LANES;
shared float xs[K];
shared float hidden[R];
shared float partial[256];

#include "conv_activation.glsl"

void main() {
  const uint m = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
  if (m >= uint(M)) return;  // whole workgroup: no barrier is skipped
  const int lid = int(gl_LocalInvocationIndex), lane = lid % LANES, group = lid / LANES;
  for (int k = lid; k < K; k += 256) xs[k] = float(x[int(m) * K + k]);
  barrier();
  for (int r0 = 0; r0 < R; r0 += GROUPS) {
    const int r = r0 + group;
    float acc = 0.0;
    if (r < R)
      for (int k = lane; k < K; k += LANES) acc += xs[k] * float(w1[r * K + k]);
    partial[lid] = acc;
    barrier();
    for (int s = LANES / 2; s > 0; s >>= 1) {
      if (lane < s) partial[lid] += partial[lid + s];
      barrier();
    }
    if (lane == 0 && r < R) hidden[r] = activation_of(ACT1, ACT1_MIN, ACT1_MAX, partial[lid] + (HAS_B1 != 0 ? float(b1[r]) : 0.0));
    barrier();
  }
  for (int n = lid; n < N; n += 256) {
    float acc = HAS_BIAS != 0 ? float(b2[n]) : 0.0;
    for (int r = 0; r < R; ++r) acc += hidden[r] * float(w2[n * R + r]);
    y[int(m) * N + n] = FLOAT_T(activation(acc));
  }
}
