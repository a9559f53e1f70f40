// Explicitly vectorised loops for the portable kernels (GCC vector extensions: 8 floats per
// step, lowered to AVX, SSE or NEON registers). GCC 12 at -O2 only auto-vectorises loops
// whose trip count is a known multiple of the vector width, so hot loops use these.
// Pointers may alias only as documented (y == x is fine for scale_shift).
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {
namespace portable {

typedef float VecF8 __attribute__((vector_size(32), may_alias));

// y[i] += a * x[i]
inline void axpy(int64_t n, float a, const float* x, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    VecF8 xv, yv;
    std::memcpy(&xv, x + i, sizeof(xv));
    std::memcpy(&yv, y + i, sizeof(yv));
    yv += a * xv;
    std::memcpy(y + i, &yv, sizeof(yv));
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

// y[i] = x[i] * scale + shift
inline void scale_shift(int64_t n, const float* x, float scale, float shift, float* y) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    VecF8 xv;
    std::memcpy(&xv, x + i, sizeof(xv));
    xv = xv * scale + shift;
    std::memcpy(y + i, &xv, sizeof(xv));
  }
  for (; i < n; ++i) y[i] = x[i] * scale + shift;
}

// y[i] = value
inline void fill(int64_t n, float value, float* y) {
  int64_t i = 0;
  VecF8 v = {value, value, value, value, value, value, value, value};
  for (; i + 8 <= n; i += 8) std::memcpy(y + i, &v, sizeof(v));
  for (; i < n; ++i) y[i] = value;
}

}  // namespace portable
}  // namespace ember
