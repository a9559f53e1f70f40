// Activation formulas shared by unary.comp and the fused epilogues (conv_activation.glsl), so
// a fused graph computes what the unfused one does.
// erf, Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7).
float erf_approx(float v) {
  float s = sign(v);
  float a = abs(v);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return s * (1.0 - poly * exp(-a * a));
}
float tanh_safe(float v) { return tanh(clamp(v, -15.0, 15.0)); }
float sigmoid(float v) { return 1.0 / (1.0 + exp(-v)); }
float silu(float v) { return v * sigmoid(v); }
float gelu(float v) { return 0.5 * v * (1.0 + erf_approx(v * 0.70710678118654752)); }
float gelu_tanh(float v) { return 0.5 * v * (1.0 + tanh_safe(0.79788456080286536 * (v + 0.044715 * v * v * v))); }
