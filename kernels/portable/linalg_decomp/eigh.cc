// Symmetric eigen-decomposition: _linalg_eigh, linalg_eigh, linalg_eigvalsh and
// linalg_matrix_sqrth (dense::sym_eig,
// cyclic Jacobi in double: accurate to the last digits on ill-conditioned input, which is
// what a float32 result needs). Eigenvalues ascending, as LAPACK returns them. Eigenvector
// signs are arbitrary: see normalise_signs.
#include <cmath>

#include "kernels/portable/linalg_decomp/dense.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace dense {

bool sym_eig(double* a, int64_t n, bool lower, double* w, double* v, double* work) {
  (void)work;
  // Symmetrise from the referenced triangle.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      if (lower) a[i * n + j] = a[j * n + i];
      else a[j * n + i] = a[i * n + j];
    }
  if (v != nullptr) {
    for (int64_t i = 0; i < n * n; ++i) v[i] = (i % (n + 1) == 0) ? 1.0 : 0.0;
  }
  double total = 0;
  for (int64_t i = 0; i < n * n; ++i) total += a[i] * a[i];
  bool converged = n <= 1 || total == 0.0;
  for (int sweep = 0; sweep < 100 && !converged; ++sweep) {
    double off = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
    if (!(off > 1e-36 * total)) { converged = std::isfinite(off); break; }
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0.0) continue;
        const double app = a[p * n + p], aqq = a[q * n + q];
        // Rotation zeroing a[p][q] (Rutishauser's formulas).
        const double theta = (aqq - app) / (2.0 * apq);
        double t = 1.0 / (std::fabs(theta) + std::sqrt(theta * theta + 1.0));
        if (theta < 0) t = -t;
        if (!std::isfinite(theta)) t = 0.0;
        const double c = 1.0 / std::sqrt(t * t + 1.0), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        a[p * n + q] = a[q * n + p] = 0.0;
        if (v != nullptr) {
          for (int64_t k = 0; k < n; ++k) {
            const double vkp = v[k * n + p], vkq = v[k * n + q];
            v[k * n + p] = c * vkp - s * vkq;
            v[k * n + q] = s * vkp + c * vkq;
          }
        }
      }
  }
  for (int64_t i = 0; i < n; ++i) w[i] = a[i * n + i];
  // Ascending order (selection sort, moving eigenvector columns along).
  for (int64_t i = 0; i + 1 < n; ++i) {
    int64_t best = i;
    for (int64_t j = i + 1; j < n; ++j)
      if (w[j] < w[best]) best = j;
    if (best == i) continue;
    double t = w[i]; w[i] = w[best]; w[best] = t;
    if (v != nullptr) {
      for (int64_t k = 0; k < n; ++k) {
        double x = v[k * n + i]; v[k * n + i] = v[k * n + best]; v[k * n + best] = x;
      }
    }
  }
  return converged;
}

}  // namespace dense

namespace {

using dense::Scratch;

// Eigenvector signs are arbitrary. PyTorch's CPU results carry whatever sign MKL's
// tridiagonal QR leaves (no simple rule reproduces them), so they can differ from ours by a
// factor of -1 per vector; Ember makes each vector's largest-magnitude component positive,
// which at least makes its own results deterministic.
void normalise_signs(double* v, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double best = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (std::fabs(v[i * n + j]) > std::fabs(best) * (1 + 1e-12)) best = v[i * n + j];
    }
    if (best < 0)
      for (int64_t i = 0; i < n; ++i) v[i * n + j] = -v[i * n + j];
  }
}

bool uplo_lower(KernelArgs& a, size_t i) {
  if (a.string_is(i, "L") || a.string_is(i, "l")) return true;
  if (a.string_is(i, "U") || a.string_is(i, "u")) return false;
  a.fail("UPLO must be 'L' or 'U'");
  return true;
}

Error eigh_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool lower, Tensor* vals, Tensor* vecs) {
  if (!dense::check_matrix(a, in, true)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  if (!resize_to(a, vals, dense::batch_shape_with(*in, 2, m, 0, 1))) return a.error();
  if (vecs != nullptr && !resize_like(a, vecs, *in)) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  double* ev = sc.doubles(m + 1);
  double* v = sc.doubles(m * m + 1);
  double* work = sc.doubles(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    if (!dense::sym_eig(w, m, lower, ev, vecs != nullptr ? v : nullptr, work)) {
      return ctx.fail(Error::InvalidArgument, "the eigenvalue algorithm did not converge (non-finite input?)");
    }
    dense::store(*vals, b * m, m, ev);
    if (vecs != nullptr) {
      normalise_signs(v, m);
      dense::store(*vecs, b * m * m, m * m, v);
    }
  }
  return Error::Ok;
}

// _linalg_eigh(A, UPLO="L", compute_v=True) -> (eigenvalues, eigenvectors); without
// compute_v the eigenvectors output is empty.
Error linalg_eigh_private(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool lower = uplo_lower(a, 1);
  bool compute_v = a.bool_value(2);
  Tensor* vals = a.out(3);
  Tensor* vecs = a.out(4);
  if (!a.ok()) return a.error();
  if (!compute_v) {
    if (!dense::resize_empty(a, vecs) && !a.ok()) return a.error();
    return eigh_common(ctx, a, in, lower, vals, nullptr);
  }
  return eigh_common(ctx, a, in, lower, vals, vecs);
}

// linalg_eigh(self, UPLO="L") -> (eigenvalues, eigenvectors)
Error linalg_eigh(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool lower = uplo_lower(a, 1);
  Tensor* vals = a.out(2);
  Tensor* vecs = a.out(3);
  if (!a.ok()) return a.error();
  return eigh_common(ctx, a, in, lower, vals, vecs);
}

// linalg_eigvalsh(self, UPLO="L")
Error linalg_eigvalsh(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  bool lower = uplo_lower(a, 1);
  Tensor* vals = a.out(2);
  if (!a.ok()) return a.error();
  return eigh_common(ctx, a, in, lower, vals, nullptr);
}

// linalg_matrix_sqrth(self): the principal square root V diag(sqrt(w)) V^T of a symmetric
// positive-definite matrix (lower triangle read); a negative eigenvalue gives NaNs.
Error linalg_matrix_sqrth(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!dense::check_matrix(a, in, true) || !resize_like(a, out, *in)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  double* ev = sc.doubles(m + 1);
  double* v = sc.doubles(m * m + 1);
  double* work = sc.doubles(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    if (!dense::sym_eig(w, m, true, ev, v, work)) {
      return ctx.fail(Error::InvalidArgument, "the eigenvalue algorithm did not converge (non-finite input?)");
    }
    for (int64_t i = 0; i < m; ++i) ev[i] = std::sqrt(ev[i]);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < m; ++p) acc += v[i * m + p] * ev[p] * v[j * m + p];
        w[i * m + j] = acc;
      }
    dense::store(*out, b * m * m, m * m, w);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::linalg_matrix_sqrth.default", linalg_matrix_sqrth);
EMBER_REGISTER_KERNEL("aten::_linalg_eigh.default", linalg_eigh_private);
EMBER_REGISTER_KERNEL("aten::linalg_eigh.default", linalg_eigh);
EMBER_REGISTER_KERNEL("aten::linalg_eigvalsh.default", linalg_eigvalsh);

}  // namespace portable
}  // namespace ember
