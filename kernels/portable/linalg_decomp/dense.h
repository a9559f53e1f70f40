// Dense linear-algebra building blocks for the decomposition kernels, on row-major double
// matrices (kernels load float32 inputs into double scratch, compute, and round once):
// Householder reflectors in LAPACK's compact form, QR, LU with partial pivoting, Cholesky,
// triangular solves, a Golub-Kahan SVD (bidiagonalisation + implicit-shift QR on the
// bidiagonal, with LAPACK's sign conventions so U/V agree with PyTorch's CPU results), and
// batch/broadcast helpers. No allocation: callers pass scratch from DoubleScratch.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {
namespace portable {
namespace dense {

// Scratch of doubles (and int32s) from the temp allocator, failing with a clear message.
class Scratch {
 public:
  Scratch(KernelContext& ctx, KernelArgs& a) : ctx_(ctx), a_(a) {}
  double* doubles(int64_t count) { return static_cast<double*>(get(count * sizeof(double))); }
  template <typename T>
  T* array(int64_t count) { return static_cast<T*>(get(count * static_cast<int64_t>(sizeof(T)))); }
  int32_t* ints(int64_t count) { return static_cast<int32_t*>(get(count * sizeof(int32_t))); }

 private:
  void* get(int64_t bytes) {
    if (!a_.ok()) return nullptr;
    if (bytes <= 0) bytes = 8;
    void* p = ctx_.allocate_temp(static_cast<size_t>(bytes), 16);
    if (p == nullptr) {
      a_.fail("needs scratch memory from the temp allocator, which is missing or too small",
              Error::OutOfMemory);
    }
    return p;
  }
  KernelContext& ctx_;
  KernelArgs& a_;
};

// A contiguous floating-point batch of matrices (square when `square`); records the error.
inline bool check_matrix(KernelArgs& a, const Tensor* t, bool square) {
  if (!a.ok() || t == nullptr) return false;
  if (!require_contiguous(a, t)) return false;
  if (t->rank < 2) return a.fail("expected a tensor with at least 2 dims (batch of matrices)");
  if (!is_floating(t->dtype)) return a.fail("expected a floating-point tensor");
  if (square && t->sizes[t->rank - 1] != t->sizes[t->rank - 2]) return a.fail("expected square matrices");
  return true;
}

// Loads an m x n matrix starting at element `offset` of t (any dtype) into row-major double.
inline void load(const Tensor& t, int64_t offset, int64_t m, int64_t n, double* dst) {
  for (int64_t i = 0; i < m * n; ++i) dst[i] = load_as<double>(t.data, t.dtype, offset + i);
}
inline void store(Tensor& t, int64_t offset, int64_t count, const double* src) {
  for (int64_t i = 0; i < count; ++i) store_as<double>(t.data, t.dtype, offset + i, src[i]);
}

inline double copysign_d(double a, double b) { return std::signbit(b) ? -std::fabs(a) : std::fabs(a); }

// ---------------------------------------------------------------------------------------
// Householder reflector (LAPACK dlarfg): given alpha and x[0..k) (stride incx), finds
// H = I - tau v v^T with v = (1, x'), H (alpha, x) = (beta, 0), beta = -sign(alpha)*norm.
// Overwrites x with v's tail and returns tau; *alpha becomes beta.
inline double householder(double* alpha, double* x, int64_t k, int64_t incx) {
  if (k <= 0) return 0.0;
  double xnorm = 0;
  for (int64_t i = 0; i < k; ++i) xnorm = std::hypot(xnorm, x[i * incx]);
  if (xnorm == 0.0) return 0.0;
  double beta = -copysign_d(std::hypot(*alpha, xnorm), *alpha);
  double tau = (beta - *alpha) / beta;
  double scale = 1.0 / (*alpha - beta);
  for (int64_t i = 0; i < k; ++i) x[i * incx] *= scale;
  *alpha = beta;
  return tau;
}

// geqrf on a row-major m x n matrix (lda = n): R in the upper triangle, reflector tails
// below the diagonal, tau[min(m, n)].
inline void geqrf(double* a, int64_t m, int64_t n, double* tau) {
  const int64_t k = m < n ? m : n;
  for (int64_t j = 0; j < k; ++j) {
    double* ajj = a + j * n + j;
    tau[j] = householder(ajj, ajj + n, m - j - 1, n);
    if (tau[j] == 0.0) continue;
    // Apply H^T = H to columns j+1..n-1, rows j..m-1 (v[0] = 1).
    for (int64_t c = j + 1; c < n; ++c) {
      double s = a[j * n + c];
      for (int64_t i = j + 1; i < m; ++i) s += a[i * n + j] * a[i * n + c];
      s *= tau[j];
      a[j * n + c] -= s;
      for (int64_t i = j + 1; i < m; ++i) a[i * n + c] -= s * a[i * n + j];
    }
  }
}

// Reflector r of a compact QR (row-major, `lda`, `rows` rows): v_i = 1 at i == r, the
// stored entry below the diagonal, 0 above.
inline double refl(const double* a, int64_t lda, int64_t r, int64_t i) {
  return i < r ? 0.0 : i == r ? 1.0 : a[i * lda + r];
}

// C (rows x cols, row-major, ldc) := H_r C or C H_r for reflector r of `a` (length rows of
// C for the left, cols of C for the right).
inline void apply_reflector(const double* a, int64_t lda, int64_t r, double tau, bool left,
                            double* c, int64_t rows, int64_t cols, int64_t ldc) {
  if (tau == 0.0) return;
  if (left) {
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t i = r; i < rows; ++i) s += refl(a, lda, r, i) * c[i * ldc + j];
      s *= tau;
      for (int64_t i = r; i < rows; ++i) c[i * ldc + j] -= s * refl(a, lda, r, i);
    }
  } else {
    for (int64_t i = 0; i < rows; ++i) {
      double s = 0;
      for (int64_t j = r; j < cols; ++j) s += c[i * ldc + j] * refl(a, lda, r, j);
      s *= tau;
      for (int64_t j = r; j < cols; ++j) c[i * ldc + j] -= s * refl(a, lda, r, j);
    }
  }
}

// ormqr: Q = H_0 H_1 ... H_{k-1} from a compact QR `a` (lda columns); C (rows x cols) :=
// op(Q) C (left) or C op(Q) (right), op = transpose when `trans`.
inline void ormqr(const double* a, int64_t lda, const double* tau, int64_t k, bool left, bool trans,
                  double* c, int64_t rows, int64_t cols) {
  // Q C = H0 (H1 (... H_{k-1} C)): reverse order; Q^T C: forward; C Q: forward; C Q^T: reverse.
  const bool forward = left == trans;
  for (int64_t t = 0; t < k; ++t) {
    int64_t r = forward ? t : k - 1 - t;
    apply_reflector(a, lda, r, tau[r], left, c, rows, cols, cols);
  }
}

// ---------------------------------------------------------------------------------------
// LU with partial pivoting (first largest |a| as pivot, like LAPACK), row-major m x n.
// pivots[min(m,n)] are 1-based rows; returns info (0, or the 1-based index of the first
// exactly-zero pivot).
inline int32_t lu_factor(double* a, int64_t m, int64_t n, int32_t* pivots, bool pivot = true) {
  const int64_t k = m < n ? m : n;
  int32_t info = 0;
  for (int64_t j = 0; j < k; ++j) {
    int64_t p = j;
    if (pivot) {
      double best = std::fabs(a[j * n + j]);
      for (int64_t i = j + 1; i < m; ++i) {
        double v = std::fabs(a[i * n + j]);
        if (v > best) { best = v; p = i; }
      }
    }
    pivots[j] = static_cast<int32_t>(p + 1);
    if (a[p * n + j] != 0.0) {
      if (p != j) {
        for (int64_t c = 0; c < n; ++c) {
          double t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t;
        }
      }
      double inv = 1.0 / a[j * n + j];
      for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= inv;
    } else if (info == 0) {
      info = static_cast<int32_t>(j + 1);
    }
    for (int64_t i = j + 1; i < m; ++i) {
      double l = a[i * n + j];
      if (l == 0.0) continue;
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
    }
  }
  return info;
}

// Solves op(T) X = B for a triangular n x n T (row-major, ldt) and B (n x nrhs, row-major),
// in place. upper: T's upper triangle; trans: op = transpose; unit: unit diagonal.
inline void tri_solve(const double* t, int64_t ldt, int64_t n, bool upper, bool trans, bool unit,
                      double* b, int64_t nrhs) {
  // op(T) is lower when (upper == trans).
  const bool lower_eff = upper == trans;
  auto at = [&](int64_t i, int64_t j) { return trans ? t[j * ldt + i] : t[i * ldt + j]; };
  if (lower_eff) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < nrhs; ++c) {
        double s = b[i * nrhs + c];
        for (int64_t j = 0; j < i; ++j) s -= at(i, j) * b[j * nrhs + c];
        b[i * nrhs + c] = unit ? s : s / at(i, i);
      }
    }
  } else {
    for (int64_t i = n - 1; i >= 0; --i) {
      for (int64_t c = 0; c < nrhs; ++c) {
        double s = b[i * nrhs + c];
        for (int64_t j = i + 1; j < n; ++j) s -= at(i, j) * b[j * nrhs + c];
        b[i * nrhs + c] = unit ? s : s / at(i, i);
      }
    }
  }
}

// Applies the row interchanges of `pivots` (1-based, k of them) to B (rows x nrhs):
// forward (P^T B) or backward (P B).
inline void apply_pivots(const int32_t* pivots, int64_t k, bool forward, double* b, int64_t nrhs) {
  for (int64_t t = 0; t < k; ++t) {
    int64_t i = forward ? t : k - 1 - t;
    int64_t p = pivots[i] - 1;
    if (p == i) continue;
    for (int64_t c = 0; c < nrhs; ++c) {
      double x = b[i * nrhs + c]; b[i * nrhs + c] = b[p * nrhs + c]; b[p * nrhs + c] = x;
    }
  }
}

// Solves A X = B (B: m x k, row-major, in place) with A's LU factorisation from lu_factor;
// trans: A^T X = B.
inline void lu_solve_inplace(const double* lu, const int32_t* piv, int64_t m, bool trans, double* b, int64_t k) {
  if (!trans) {
    apply_pivots(piv, m, true, b, k);
    tri_solve(lu, m, m, false, false, true, b, k);
    tri_solve(lu, m, m, true, false, false, b, k);
  } else {
    tri_solve(lu, m, m, true, true, false, b, k);
    tri_solve(lu, m, m, false, true, true, b, k);
    apply_pivots(piv, m, false, b, k);
  }
}

// Cholesky of a symmetric positive-definite n x n matrix (reads the lower triangle), in
// place to L (upper part zeroed). Returns 0 or the 1-based order of the failing minor.
inline int32_t cholesky_lower(double* a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t p = 0; p < j; ++p) d -= a[j * n + p] * a[j * n + p];
    if (!(d > 0.0)) return static_cast<int32_t>(j + 1);
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int64_t p = 0; p < j; ++p) s -= a[i * n + p] * a[j * n + p];
      a[i * n + j] = s / d;
    }
    for (int64_t c = j + 1; c < n; ++c) a[j * n + c] = 0.0;
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// Plane rotation (LAPACK dlartg): c, s, r with [c s; -s c] (f, g) = (r, 0), c >= 0.
inline void rotg(double f, double g, double* c, double* s, double* r) {
  if (g == 0.0) { *c = 1; *s = 0; *r = f; return; }
  if (f == 0.0) { *c = 0; *s = g < 0 ? -1.0 : 1.0; *r = std::fabs(g); return; }
  double d = std::hypot(f, g);
  *c = std::fabs(f) / d;
  *r = copysign_d(d, f);
  *s = g / *r;
}

// Singular values of [f g; 0 h] (dlas2): ssmin <= ssmax, both >= 0.
inline void sv2x2_values(double f, double g, double h, double* ssmin, double* ssmax) {
  double fa = std::fabs(f), ga = std::fabs(g), ha = std::fabs(h);
  double fhmn = fa < ha ? fa : ha, fhmx = fa > ha ? fa : ha;
  if (fhmn == 0.0) {
    *ssmin = 0.0;
    if (fhmx == 0.0) { *ssmax = ga; return; }
    double mx = fhmx > ga ? fhmx : ga, mn = fhmx < ga ? fhmx : ga;
    *ssmax = mx * std::sqrt(1.0 + (mn / mx) * (mn / mx));
    return;
  }
  if (ga < fhmx) {
    double as = 1.0 + fhmn / fhmx, at = (fhmx - fhmn) / fhmx, au = (ga / fhmx) * (ga / fhmx);
    double c = 2.0 / (std::sqrt(as * as + au) + std::sqrt(at * at + au));
    *ssmin = fhmn * c;
    *ssmax = fhmx / c;
  } else {
    double au = fhmx / ga;
    if (au == 0.0) {
      *ssmin = (fhmn * fhmx) / ga;
      *ssmax = ga;
    } else {
      double as = 1.0 + fhmn / fhmx, at = (fhmx - fhmn) / fhmx;
      double c = 1.0 / (std::sqrt(1.0 + (as * au) * (as * au)) + std::sqrt(1.0 + (at * au) * (at * au)));
      *ssmin = (fhmn * c) * au;
      *ssmin = *ssmin + *ssmin;
      *ssmax = ga / (c + c);
    }
  }
}

// Full SVD of [f g; 0 h] (dlasv2): [csl snl; -snl csl] [f g; 0 h] [csr -snr; snr csr] =
// diag(ssmax, ssmin), with |ssmax| >= |ssmin| (signed).
inline void sv2x2(double f, double g, double h, double* ssmin, double* ssmax, double* snr, double* csr,
                  double* snl, double* csl) {
  const double eps = 1.1102230246251565e-16;
  double ft = f, fa = std::fabs(ft), ht = h, ha = std::fabs(h);
  int pmax = 1;
  bool swap = ha > fa;
  if (swap) {
    pmax = 3;
    double t = ft; ft = ht; ht = t;
    t = fa; fa = ha; ha = t;
  }
  double gt = g, ga = std::fabs(gt);
  double clt, crt, slt, srt, smin, smax;
  if (ga == 0.0) {
    smin = ha; smax = fa; clt = 1; crt = 1; slt = 0; srt = 0;
  } else {
    bool gasmal = true;
    smin = smax = clt = crt = slt = srt = 0;
    if (ga > fa) {
      pmax = 2;
      if (fa / ga < eps) {
        gasmal = false;
        smax = ga;
        smin = ha > 1.0 ? fa / (ga / ha) : (fa / ga) * ha;
        clt = 1; slt = ht / gt; srt = 1; crt = ft / gt;
      }
    }
    if (gasmal) {
      double d = fa - ha;
      double l = d == fa ? 1.0 : d / fa;
      double m = gt / ft;
      double t = 2.0 - l;
      double mm = m * m, tt = t * t;
      double s = std::sqrt(tt + mm);
      double r = l == 0.0 ? std::fabs(m) : std::sqrt(l * l + mm);
      double aa = 0.5 * (s + r);
      smin = ha / aa;
      smax = fa * aa;
      if (mm == 0.0) {
        if (l == 0.0) t = copysign_d(2.0, ft) * copysign_d(1.0, gt);
        else t = gt / copysign_d(d, ft) + m / t;
      } else {
        t = (m / (s + t) + m / (r + l)) * (1.0 + aa);
      }
      l = std::sqrt(t * t + 4.0);
      crt = 2.0 / l;
      srt = t / l;
      clt = (crt + srt * m) / aa;
      slt = (ht / ft) * srt / aa;
    }
  }
  if (swap) { *csl = srt; *snl = crt; *csr = slt; *snr = clt; }
  else { *csl = clt; *snl = slt; *csr = crt; *snr = srt; }
  double tsign = 1.0;
  if (pmax == 1) tsign = copysign_d(1.0, *csr) * copysign_d(1.0, *csl) * copysign_d(1.0, f);
  if (pmax == 2) tsign = copysign_d(1.0, *snr) * copysign_d(1.0, *csl) * copysign_d(1.0, g);
  if (pmax == 3) tsign = copysign_d(1.0, *snr) * copysign_d(1.0, *snl) * copysign_d(1.0, h);
  *ssmax = copysign_d(smax, tsign);
  *ssmin = copysign_d(smin, tsign * copysign_d(1.0, f) * copysign_d(1.0, h));
}

// Singular values/vectors of an n x n upper bidiagonal (d[n], e[n-1]) by implicit-shift QR
// (Demmel-Kahan, with zero-shift sweeps where a shift would spoil relative accuracy).
// vt (n x ncvt, row-major) := VT_B * vt and u (nru x n, row-major) := u * U_B, so starting
// from identities gives B = U_B diag(d) VT_B. Singular values come back nonnegative and
// decreasing. work: 4n doubles. Returns false when the iteration did not converge.
bool bidiag_svd(int64_t n, double* d, double* e, double* vt, int64_t ncvt, double* u, int64_t nru,
                double* work);

// SVD of a row-major m x n matrix a (m >= n; destroyed): s[n]; u (m x ucols, ucols = n or m
// when full) and vt (n x n). work: see svd_work_size(). False on non-convergence.
int64_t svd_work_size(int64_t m, int64_t n);
bool svd_tall(double* a, int64_t m, int64_t n, bool full, double* s, double* u, double* vt, double* work);

// Eigen-decomposition of a symmetric n x n matrix (row-major; only the `lower` (or upper)
// triangle is read; destroyed) in double by LAPACK's ?syevd path (syevd.h): eigenvalues w[n]
// ascending, orthonormal eigenvectors as v's columns (row-major n x n; required). work:
// syevd_work(n) doubles. False when the iteration did not converge.
bool sym_eig(double* a, int64_t n, bool lower, double* w, double* v, double* work);

// ---------------------------------------------------------------------------------------
// Batch broadcasting for two operands whose last `core` dims are matrices.
struct BatchPlan {
  Shape batch;           // broadcast batch shape
  int64_t count = 1;     // its element count
  int64_t stride_a[kMaxRank] = {};  // per batch dim, in matrices of operand a (0: broadcast)
  int64_t stride_b[kMaxRank] = {};
  // Matrix index of operand a / b for batch element i.
  int64_t index_a(int64_t i) const { return index(i, stride_a); }
  int64_t index_b(int64_t i) const { return index(i, stride_b); }

 private:
  int64_t index(int64_t i, const int64_t* st) const {
    int64_t off = 0;
    for (int d = batch.rank - 1; d >= 0; --d) {
      int64_t c = i % batch.d[d];
      i /= batch.d[d];
      off += c * st[d];
    }
    return off;
  }
};

// False when the batch dims (all but the last `core_a` / `core_b`) do not broadcast.
inline bool plan_batches(const Tensor& a, int core_a, const Tensor& b, int core_b, BatchPlan* p) {
  Shape sa, sb;
  for (int i = 0; i < a.rank - core_a; ++i) sa.push(a.sizes[i]);
  for (int i = 0; i < b.rank - core_b; ++i) sb.push(b.sizes[i]);
  if (!broadcast_shapes(sa, sb, p->batch)) return false;
  p->count = p->batch.numel();
  int64_t stride_a = 1, stride_b = 1;
  for (int d = p->batch.rank - 1; d >= 0; --d) {
    int da = d - (p->batch.rank - sa.rank), db = d - (p->batch.rank - sb.rank);
    p->stride_a[d] = (da >= 0 && sa.d[da] != 1) ? stride_a : 0;
    p->stride_b[d] = (db >= 0 && sb.d[db] != 1) ? stride_b : 0;
    if (da >= 0) stride_a *= sa.d[da];
    if (db >= 0) stride_b *= sb.d[db];
  }
  return true;
}

// Batch count of a tensor whose last two dims are the matrix.
inline int64_t batch_count(const Tensor& t) {
  int64_t c = 1;
  for (int i = 0; i + 2 < t.rank; ++i) c *= t.sizes[i];
  return c;
}

// Output shape = t's batch dims followed by (r, c).
inline Shape batch_shape_with(const Tensor& t, int core, int64_t r, int64_t c, int extra = 2) {
  Shape s;
  for (int i = 0; i < t.rank - core; ++i) s.push(t.sizes[i]);
  if (extra >= 1) s.push(r);
  if (extra >= 2) s.push(c);
  return s;
}

// Resizes `out` to zeros in every dim (an empty result such as Q for mode='r').
inline bool resize_empty(KernelArgs& a, Tensor* out) {
  if (!a.ok() || out == nullptr) return false;
  Shape s;
  for (int i = 0; i < out->rank; ++i) s.push(0);
  if (out->rank == 0) return true;
  return resize_to(a, out, s);
}

}  // namespace dense
}  // namespace portable
}  // namespace ember
