// Rotate-half RoPE, the one formula of rope.comp and attention.comp (included by both): element
// d of a row of D values x rotated by its cos / sin,
//   y[d] = x[d] * cos[d] + (d < D / 2 ? -x[d + D / 2] : x[d - D / 2]) * sin[d],
// with `partner` the other element of d's pair (x[d + D / 2] in the first half, x[d - D / 2] in
// the second). Arithmetic in fp32 whatever the buffers hold.
float rotate_half(float v, float partner, bool first_half, float c, float s) {
  return v * c + (first_half ? -partner : partner) * s;
}
