// A convolution's fused activation (spec constants ACT, ACT_MIN, ACT_MAX of the including
// shader): 0 none, 1 clamp to [ACT_MIN, ACT_MAX] (relu, relu6, hardtanh), 2 silu, 3 sigmoid,
// computed as unary.comp computes them so a fused graph matches an unfused one.
float activation(float v) {
  if (ACT == 1) return min(max(v, ACT_MIN), ACT_MAX);
  if (ACT == 2) return v * (1.0 / (1.0 + exp(-v)));
  if (ACT == 3) return 1.0 / (1.0 + exp(-v));
  return v;
}
