// LDL^T factorisation of symmetric matrices with Bunch-Kaufman pivoting, and solves with it:
// linalg_ldl_factor_ex, linalg_ldl_factor, linalg_ldl_solve. The factorisation is LAPACK's
// unblocked dsytf2 on the lower triangle (what PyTorch's CPU backend returns for these
// sizes): LD holds L below the diagonal and the 1x1 / 2x2 blocks of D on it (upper triangle
// zeroed), pivots are 1-based, a 2x2 block's two entries both -p. Real matrices: hermitian
// is the same as symmetric. Computed in double, rounded once.
#include <cmath>

#include "kernels/portable/linalg_decomp/dense.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

using dense::Scratch;

// dsytf2, uplo = 'L', on the n x n row-major a (0-based here). Returns info: 0, or the
// 1-based index of the first exactly-zero diagonal block (the factorisation still completes).
int32_t sytf2_lower(double* a, int64_t n, int32_t* ipiv) {
  const double alpha = (1.0 + std::sqrt(17.0)) / 8.0;
  auto A = [a, n](int64_t i, int64_t j) -> double& { return a[i * n + j]; };
  int32_t info = 0;
  int64_t k = 0;
  while (k < n) {
    int64_t kstep = 1, kp = k;
    const double absakk = std::fabs(A(k, k));
    int64_t imax = k;
    double colmax = 0;
    for (int64_t i = k + 1; i < n; ++i) {
      if (std::fabs(A(i, k)) > colmax) { colmax = std::fabs(A(i, k)); imax = i; }
    }
    if (std::fmax(absakk, colmax) == 0.0 || std::isnan(absakk)) {
      if (info == 0) info = static_cast<int32_t>(k + 1);
      kp = k;
    } else {
      if (absakk >= alpha * colmax) {
        kp = k;
      } else {
        double rowmax = 0;
        for (int64_t j = k; j < imax; ++j) rowmax = std::fmax(rowmax, std::fabs(A(imax, j)));
        for (int64_t j = imax + 1; j < n; ++j) rowmax = std::fmax(rowmax, std::fabs(A(j, imax)));
        if (absakk >= alpha * colmax * (colmax / rowmax)) {
          kp = k;
        } else if (std::fabs(A(imax, imax)) >= alpha * rowmax) {
          kp = imax;
        } else {
          kp = imax;
          kstep = 2;
        }
      }
      const int64_t kk = k + kstep - 1;
      if (kp != kk) {
        // Interchange rows and columns kk and kp of the trailing lower triangle.
        for (int64_t i = kp + 1; i < n; ++i) { double t = A(i, kk); A(i, kk) = A(i, kp); A(i, kp) = t; }
        for (int64_t j = kk + 1; j < kp; ++j) { double t = A(j, kk); A(j, kk) = A(kp, j); A(kp, j) = t; }
        double t = A(kk, kk); A(kk, kk) = A(kp, kp); A(kp, kp) = t;
        if (kstep == 2) { t = A(k + 1, k); A(k + 1, k) = A(kp, k); A(kp, k) = t; }
      }
      if (kstep == 1) {
        if (k + 1 < n) {
          const double d11 = 1.0 / A(k, k);
          for (int64_t j = k + 1; j < n; ++j)
            for (int64_t i = j; i < n; ++i) A(i, j) -= d11 * A(i, k) * A(j, k);
          for (int64_t i = k + 1; i < n; ++i) A(i, k) *= d11;
        }
      } else if (k + 2 < n) {
        double d21 = A(k + 1, k);
        const double d11 = A(k + 1, k + 1) / d21;
        const double d22 = A(k, k) / d21;
        const double t = 1.0 / (d11 * d22 - 1.0);
        d21 = t / d21;
        for (int64_t j = k + 2; j < n; ++j) {
          const double wk = d21 * (d11 * A(j, k) - A(j, k + 1));
          const double wkp1 = d21 * (d22 * A(j, k + 1) - A(j, k));
          for (int64_t i = j; i < n; ++i) A(i, j) -= A(i, k) * wk + A(i, k + 1) * wkp1;
          A(j, k) = wk;
          A(j, k + 1) = wkp1;
        }
      }
    }
    if (kstep == 1) {
      ipiv[k] = static_cast<int32_t>(kp + 1);
    } else {
      ipiv[k] = ipiv[k + 1] = static_cast<int32_t>(-(kp + 1));
    }
    k += kstep;
  }
  return info;
}

// dsytrs, uplo = 'L': solves A X = B (B: n x nrhs row-major, in place) with sytf2's output.
// False when a pivot is out of range or a block is singular.
bool sytrs_lower(const double* a, int64_t n, const int32_t* ipiv, double* b, int64_t nrhs) {
  auto A = [a, n](int64_t i, int64_t j) { return a[i * n + j]; };
  auto swap_rows = [b, nrhs](int64_t i, int64_t j) {
    if (i == j) return;
    for (int64_t c = 0; c < nrhs; ++c) { double t = b[i * nrhs + c]; b[i * nrhs + c] = b[j * nrhs + c]; b[j * nrhs + c] = t; }
  };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = ipiv[i] > 0 ? ipiv[i] : -static_cast<int64_t>(ipiv[i]);
    if (ipiv[i] == 0 || p > n) return false;
  }
  // L D Y = B.
  int64_t k = 0;
  while (k < n) {
    if (ipiv[k] > 0) {
      swap_rows(k, ipiv[k] - 1);
      for (int64_t i = k + 1; i < n; ++i)
        for (int64_t c = 0; c < nrhs; ++c) b[i * nrhs + c] -= A(i, k) * b[k * nrhs + c];
      if (A(k, k) == 0.0) return false;
      for (int64_t c = 0; c < nrhs; ++c) b[k * nrhs + c] /= A(k, k);
      k += 1;
    } else {
      if (k + 1 >= n) return false;
      swap_rows(k + 1, -static_cast<int64_t>(ipiv[k]) - 1);
      for (int64_t i = k + 2; i < n; ++i)
        for (int64_t c = 0; c < nrhs; ++c) b[i * nrhs + c] -= A(i, k) * b[k * nrhs + c] + A(i, k + 1) * b[(k + 1) * nrhs + c];
      const double akm1k = A(k + 1, k);
      if (akm1k == 0.0) return false;
      const double akm1 = A(k, k) / akm1k, ak = A(k + 1, k + 1) / akm1k;
      const double denom = akm1 * ak - 1.0;
      for (int64_t c = 0; c < nrhs; ++c) {
        const double bkm1 = b[k * nrhs + c] / akm1k, bk = b[(k + 1) * nrhs + c] / akm1k;
        b[k * nrhs + c] = (ak * bkm1 - bk) / denom;
        b[(k + 1) * nrhs + c] = (akm1 * bk - bkm1) / denom;
      }
      k += 2;
    }
  }
  // L^T X = Y.
  k = n - 1;
  while (k >= 0) {
    if (ipiv[k] > 0) {
      for (int64_t c = 0; c < nrhs; ++c) {
        double s = 0;
        for (int64_t i = k + 1; i < n; ++i) s += A(i, k) * b[i * nrhs + c];
        b[k * nrhs + c] -= s;
      }
      swap_rows(k, ipiv[k] - 1);
      k -= 1;
    } else {
      if (k == 0) return false;
      for (int64_t c = 0; c < nrhs; ++c) {
        double s0 = 0, s1 = 0;
        for (int64_t i = k + 1; i < n; ++i) {
          s0 += A(i, k) * b[i * nrhs + c];
          s1 += A(i, k - 1) * b[i * nrhs + c];
        }
        b[k * nrhs + c] -= s0;
        b[(k - 1) * nrhs + c] -= s1;
      }
      swap_rows(k, -static_cast<int64_t>(ipiv[k]) - 1);
      k -= 2;
    }
  }
  return true;
}

bool require_int(KernelArgs& a, const Tensor* t) {
  if (!a.ok() || t == nullptr) return false;
  if (is_floating(t->dtype) || t->dtype == ScalarType::Bool) return a.fail("pivots/info must be an integer tensor");
  return true;
}

Error ldl_factor_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool check, Tensor* LD, Tensor* piv,
                        Tensor* info) {
  if (!dense::check_matrix(a, in, true) || !resize_like(a, LD, *in) || !require_int(a, piv)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  if (!resize_to(a, piv, dense::batch_shape_with(*in, 2, m, 0, 1))) return a.error();
  if (info != nullptr && (!require_int(a, info) || !resize_to(a, info, dense::batch_shape_with(*in, 2, 0, 0, 0)))) {
    return a.error();
  }
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    int32_t inf = sytf2_lower(w, m, p);
    if (inf != 0 && check) {
      return ctx.fail(Error::InvalidArgument, "the factorization could not be completed: D is singular");
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = i + 1; j < m; ++j) w[i * m + j] = 0.0;
    dense::store(*LD, b * m * m, m * m, w);
    for (int64_t i = 0; i < m; ++i) store_as<int64_t>(piv->data, piv->dtype, b * m + i, p[i]);
    if (info != nullptr) store_as<int64_t>(info->data, info->dtype, b, inf);
  }
  return Error::Ok;
}

// linalg_ldl_factor_ex(self, *, hermitian=False, check_errors=False) -> (LD, pivots, info)
Error linalg_ldl_factor_ex(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  bool check = a.bool_value(2);
  Tensor* LD = a.out(3);
  Tensor* piv = a.out(4);
  Tensor* info = a.out(5);
  if (!a.ok()) return a.error();
  return ldl_factor_common(ctx, a, in, check, LD, piv, info);
}

// linalg_ldl_factor(self, *, hermitian=False) -> (LD, pivots)
Error linalg_ldl_factor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* LD = a.out(2);
  Tensor* piv = a.out(3);
  if (!a.ok()) return a.error();
  return ldl_factor_common(ctx, a, in, true, LD, piv, nullptr);
}

// linalg_ldl_solve(LD, pivots, B, *, hermitian=False)
Error linalg_ldl_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* LD = a.tensor(0);
  const Tensor* piv = a.tensor(1);
  const Tensor* B = a.tensor(2);
  Tensor* out = a.out(4);
  if (!dense::check_matrix(a, LD, true) || !dense::check_matrix(a, B, false) || !require_int(a, piv) ||
      !require_contiguous(a, piv)) {
    return a.error();
  }
  const int64_t m = LD->sizes[LD->rank - 1];
  const int64_t k = B->sizes[B->rank - 1];
  if (B->sizes[B->rank - 2] != m) return a.fail("B's rows must match LD's size"), a.error();
  if (piv->rank != LD->rank - 1 || piv->sizes[piv->rank - 1] != m) return a.fail("pivots do not match LD"), a.error();
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, 2, *LD, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  Shape os = plan.batch;
  os.push(m);
  os.push(k);
  if (!resize_to(a, out, os)) return a.error();
  Scratch sc(ctx, a);
  double* ld = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    const int64_t ib = plan.index_b(b);
    dense::load(*LD, ib * m * m, m, m, ld);
    for (int64_t i = 0; i < m; ++i) p[i] = static_cast<int32_t>(load_as<int64_t>(piv->data, piv->dtype, ib * m + i));
    dense::load(*B, plan.index_a(b) * m * k, m, k, x);
    if (!sytrs_lower(ld, m, p, x, k)) {
      return ctx.fail(Error::InvalidArgument, "invalid pivots or a singular D block in the LDL factorization");
    }
    dense::store(*out, b * m * k, m * k, x);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::linalg_ldl_factor_ex.default", linalg_ldl_factor_ex);
EMBER_REGISTER_KERNEL("aten::linalg_ldl_factor.default", linalg_ldl_factor);
EMBER_REGISTER_KERNEL("aten::linalg_ldl_solve.default", linalg_ldl_solve);

}  // namespace portable
}  // namespace ember
