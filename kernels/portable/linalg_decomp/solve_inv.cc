// Linear solves, inverses and determinants built on LU / Cholesky (dense.h):
// linalg_cholesky(_ex), linalg_inv(_ex), linalg_solve(_ex), _linalg_solve_ex,
// linalg_solve_triangular, linalg_det, _linalg_det, linalg_lu, linalg_householder_product,
// linalg_matrix_power. Batched (with broadcasting where PyTorch broadcasts), computed in
// double and rounded once. Singular / non-positive-definite inputs: the `_ex` variants report
// them through `info` (as LAPACK numbers them, 1-based); the others fail with an error.
#include <cmath>
#include <limits>

#include "kernels/portable/linalg_decomp/dense.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

using dense::Scratch;

void identity(double* x, int64_t m) {
  for (int64_t i = 0; i < m * m; ++i) x[i] = (i % (m + 1) == 0) ? 1.0 : 0.0;
}

bool require_int_out(KernelArgs& a, const Tensor* t) {
  if (!a.ok() || t == nullptr) return false;
  if (is_floating(t->dtype) || t->dtype == ScalarType::Bool) return a.fail("expected an integer output (info/pivots)");
  return true;
}

// ---------------------------------------------------------------------------------------
// Cholesky.

Error cholesky_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool upper, bool check, Tensor* L,
                      Tensor* info) {
  if (!dense::check_matrix(a, in, true) || !resize_like(a, L, *in)) return a.error();
  if (info != nullptr && (!require_int_out(a, info) || !resize_to(a, info, dense::batch_shape_with(*in, 2, 0, 0, 0)))) {
    return a.error();
  }
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    // Lower: the lower triangle is read; upper: U^T U = A reads the upper one (its transpose).
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        w[i * m + j] = load_as<double>(in->data, in->dtype, b * m * m + (upper ? j * m + i : i * m + j));
    int32_t inf = dense::cholesky_lower(w, m);
    if (inf != 0) {
      if (check) {
        return ctx.fail(Error::InvalidArgument,
                        "the factorization could not be completed because the input is not positive-definite");
      }
      // LAPACK leaves the failed trailing part unspecified; PyTorch returns it as computed.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = i + 1; j < m; ++j) w[i * m + j] = 0.0;
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        store_as<double>(L->data, L->dtype, b * m * m + i * m + j, upper ? w[j * m + i] : w[i * m + j]);
    if (info != nullptr) store_as<int64_t>(info->data, info->dtype, b, inf);
  }
  return Error::Ok;
}

// linalg_cholesky_ex(self, *, upper=False, check_errors=False) -> (L, info)
Error linalg_cholesky_ex(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool upper = a.bool_value(1), check = a.bool_value(2);
  Tensor* L = a.out(3);
  Tensor* info = a.out(4);
  if (!a.ok()) return a.error();
  return cholesky_common(ctx, a, in, upper, check, L, info);
}

// linalg_cholesky(self, *, upper=False)
Error linalg_cholesky(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  bool upper = a.bool_value(1);
  Tensor* L = a.out(2);
  if (!a.ok()) return a.error();
  return cholesky_common(ctx, a, in, upper, true, L, nullptr);
}

// ---------------------------------------------------------------------------------------
// Inverse.

Error inv_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool check, Tensor* out, Tensor* info) {
  if (!dense::check_matrix(a, in, true) || !resize_like(a, out, *in)) return a.error();
  if (info != nullptr && (!require_int_out(a, info) || !resize_to(a, info, dense::batch_shape_with(*in, 2, 0, 0, 0)))) {
    return a.error();
  }
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    int32_t inf = dense::lu_factor(w, m, m, p);
    if (inf != 0 && check) {
      return ctx.fail(Error::InvalidArgument, "the inversion could not be completed because the input matrix is singular");
    }
    identity(x, m);
    dense::lu_solve_inplace(w, p, m, false, x, m);
    dense::store(*out, b * m * m, m * m, x);
    if (info != nullptr) store_as<int64_t>(info->data, info->dtype, b, inf);
  }
  return Error::Ok;
}

// linalg_inv_ex(A, *, check_errors=False) -> (inverse, info)
Error linalg_inv_ex(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool check = a.bool_value(1);
  Tensor* out = a.out(2);
  Tensor* info = a.out(3);
  if (!a.ok()) return a.error();
  return inv_common(ctx, a, in, check, out, info);
}

// linalg_inv(A) / inverse(self)
Error linalg_inv(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  return inv_common(ctx, a, in, true, out, nullptr);
}

// ---------------------------------------------------------------------------------------
// Solve: A X = B (left) or X A = B (right). B is a batch of vectors when it is 1-D or shaped
// like A without its last dim (PyTorch's rule).

struct SolveOuts {
  Tensor* result = nullptr;
  Tensor* LU = nullptr;
  Tensor* pivots = nullptr;
  Tensor* info = nullptr;
};

Error solve_common(KernelContext& ctx, KernelArgs& a, const Tensor* A, const Tensor* B, bool left, bool check,
                   const SolveOuts& o) {
  if (!dense::check_matrix(a, A, true) || !require_contiguous(a, B)) return a.error();
  if (B->rank < 1 || !is_floating(B->dtype)) return a.fail("B must be a floating-point tensor with at least 1 dim"), a.error();
  const int64_t m = A->sizes[A->rank - 1];
  bool vector_case = B->rank == 1;
  if (B->rank == A->rank - 1) {
    vector_case = true;
    for (int i = 0; i < B->rank; ++i) vector_case = vector_case && B->sizes[i] == A->sizes[i];
  }
  if (vector_case && !left) return a.fail("a vector B is not supported with left=False (as in PyTorch)"), a.error();
  const int core_b = vector_case ? 1 : 2;
  int64_t br = 0, bc = 0;
  if (vector_case) {
    br = B->sizes[B->rank - 1];
    bc = 1;
    if (br != m) return a.fail("B's length does not match A's size"), a.error();
  } else {
    br = B->sizes[B->rank - 2];
    bc = B->sizes[B->rank - 1];
    if ((left ? br : bc) != m) return a.fail("B's size does not match A's (left: rows, right: columns)"), a.error();
  }
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, core_b, *A, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  Shape rs = plan.batch;
  rs.push(br);
  if (!vector_case) rs.push(bc);
  if (!resize_to(a, o.result, rs)) return a.error();
  if (o.LU != nullptr) {
    Shape ls = plan.batch, ps = plan.batch;
    ls.push(m);
    ls.push(m);
    ps.push(m);
    if (!resize_to(a, o.LU, ls) || !require_int_out(a, o.pivots) || !resize_to(a, o.pivots, ps)) return a.error();
  }
  if (o.info != nullptr && (!require_int_out(a, o.info) || !resize_to(a, o.info, plan.batch))) return a.error();
  const int64_t k = vector_case ? 1 : (left ? bc : br);  // right-hand sides
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    dense::load(*A, plan.index_b(b) * m * m, m, m, w);
    int32_t inf = dense::lu_factor(w, m, m, p);
    if (inf != 0 && check) {
      return ctx.fail(Error::InvalidArgument, "the solver failed because the input matrix is singular");
    }
    const int64_t boff = plan.index_a(b) * br * bc;
    const bool cols = vector_case || left;  // x = B (m x k) or B^T
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        x[i * k + c] = load_as<double>(B->data, B->dtype, boff + (cols ? i * k + c : c * bc + i));
    // Right: X A = B <=> A^T X^T = B^T.
    dense::lu_solve_inplace(w, p, m, !(vector_case || left), x, k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        store_as<double>(o.result->data, o.result->dtype, b * br * bc + (cols ? i * k + c : c * bc + i), x[i * k + c]);
    if (o.LU != nullptr) {
      dense::store(*o.LU, b * m * m, m * m, w);
      for (int64_t i = 0; i < m; ++i) store_as<int64_t>(o.pivots->data, o.pivots->dtype, b * m + i, p[i]);
    }
    if (o.info != nullptr) store_as<int64_t>(o.info->data, o.info->dtype, b, inf);
  }
  return Error::Ok;
}

// _linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, LU, pivots, info)
Error linalg_solve_ex_private(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  const Tensor* A = a.tensor(0);
  const Tensor* B = a.tensor(1);
  bool left = a.bool_value(2), check = a.bool_value(3);
  SolveOuts o;
  o.result = a.out(4);
  o.LU = a.out(5);
  o.pivots = a.out(6);
  o.info = a.out(7);
  if (!a.ok()) return a.error();
  return solve_common(ctx, a, A, B, left, check, o);
}

// linalg_solve_ex(A, B, *, left=True, check_errors=False) -> (result, info)
Error linalg_solve_ex(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* A = a.tensor(0);
  const Tensor* B = a.tensor(1);
  bool left = a.bool_value(2), check = a.bool_value(3);
  SolveOuts o;
  o.result = a.out(4);
  o.info = a.out(5);
  if (!a.ok()) return a.error();
  return solve_common(ctx, a, A, B, left, check, o);
}

// linalg_solve(A, B, *, left=True)
Error linalg_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* A = a.tensor(0);
  const Tensor* B = a.tensor(1);
  bool left = a.bool_value(2);
  SolveOuts o;
  o.result = a.out(3);
  if (!a.ok()) return a.error();
  return solve_common(ctx, a, A, B, left, true, o);
}

// linalg_solve_triangular(self (A), B, *, upper, left=True, unitriangular=False): only A's
// `upper` (or lower) triangle is read.
Error linalg_solve_triangular(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* A = a.tensor(0);
  const Tensor* B = a.tensor(1);
  bool upper = a.bool_value(2), left = a.bool_value(3), unit = a.bool_value(4);
  Tensor* out = a.out(5);
  if (!dense::check_matrix(a, A, true) || !dense::check_matrix(a, B, false)) return a.error();
  const int64_t m = A->sizes[A->rank - 1];
  const int64_t br = B->sizes[B->rank - 2], bc = B->sizes[B->rank - 1];
  if ((left ? br : bc) != m) return a.fail("B's size does not match A's (left: rows, right: columns)"), a.error();
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, 2, *A, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  Shape os = plan.batch;
  os.push(br);
  os.push(bc);
  if (!resize_to(a, out, os)) return a.error();
  const int64_t k = left ? bc : br;
  Scratch sc(ctx, a);
  double* t = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    const int64_t aoff = plan.index_b(b) * m * m;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        bool keep = upper ? j >= i : j <= i;
        t[i * m + j] = keep ? load_as<double>(A->data, A->dtype, aoff + i * m + j) : 0.0;
      }
    const int64_t boff = plan.index_a(b) * br * bc;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        x[i * k + c] = load_as<double>(B->data, B->dtype, boff + (left ? i * bc + c : c * bc + i));
    // Right: X A = B <=> A^T X^T = B^T.
    dense::tri_solve(t, m, m, upper, !left, unit, x, k);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        store_as<double>(out->data, out->dtype, b * br * bc + (left ? i * bc + c : c * bc + i), x[i * k + c]);
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------------------
// Determinant: the product of U's diagonal, negated per row interchange.

Error det_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, Tensor* out, Tensor* LU, Tensor* piv) {
  if (!dense::check_matrix(a, in, true)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, 0, 0, 0))) return a.error();
  if (LU != nullptr && (!resize_like(a, LU, *in) || !require_int_out(a, piv) ||
                        !resize_to(a, piv, dense::batch_shape_with(*in, 2, m, 0, 1)))) {
    return a.error();
  }
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    dense::lu_factor(w, m, m, p);
    double det = 1.0;
    for (int64_t i = 0; i < m; ++i) {
      det *= w[i * m + i];
      if (p[i] != i + 1) det = -det;
    }
    store_as<double>(out->data, out->dtype, b, det);
    if (LU != nullptr) {
      dense::store(*LU, b * m * m, m * m, w);
      for (int64_t i = 0; i < m; ++i) store_as<int64_t>(piv->data, piv->dtype, b * m + i, p[i]);
    }
  }
  return Error::Ok;
}

// linalg_det(A) / det(self)
Error linalg_det(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  return det_common(ctx, a, in, out, nullptr, nullptr);
}

// _linalg_det(A) -> (result, LU, pivots)
Error linalg_det_private(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  Tensor* LU = a.out(2);
  Tensor* piv = a.out(3);
  if (!a.ok()) return a.error();
  return det_common(ctx, a, in, out, LU, piv);
}

// ---------------------------------------------------------------------------------------
// linalg_lu(A, *, pivot=True) -> (P, L, U), A = P L U for m x n A.
Error linalg_lu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool pivot = a.bool_value(1);
  Tensor* P = a.out(2);
  Tensor* L = a.out(3);
  Tensor* U = a.out(4);
  if (!dense::check_matrix(a, in, false)) return a.error();
  if (!pivot) return ctx.fail(Error::NotSupported, "LU without pivoting is not supported on CPU");
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  if (!resize_to(a, P, dense::batch_shape_with(*in, 2, m, m)) || !resize_to(a, L, dense::batch_shape_with(*in, 2, m, k)) ||
      !resize_to(a, U, dense::batch_shape_with(*in, 2, k, nn))) {
    return a.error();
  }
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * nn + 1);
  int32_t* p = sc.ints(k + 1);
  int32_t* perm = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * nn, m, nn, w);
    dense::lu_factor(w, m, nn, p);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < k; ++j)
        store_as<double>(L->data, L->dtype, b * m * k + i * k + j, j < i ? w[i * nn + j] : (i == j ? 1.0 : 0.0));
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < nn; ++j)
        store_as<double>(U->data, U->dtype, b * k * nn + i * nn + j, j >= i ? w[i * nn + j] : 0.0);
    for (int64_t i = 0; i < m; ++i) perm[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < k; ++i) {
      int64_t q = p[i] - 1;
      int32_t t = perm[i]; perm[i] = perm[q]; perm[q] = t;
    }
    // P^T A = L U with row i of P^T A = row perm[i] of A, so P[perm[i], i] = 1.
    for (int64_t i = 0; i < m * m; ++i) store_as<double>(P->data, P->dtype, b * m * m + i, 0.0);
    for (int64_t i = 0; i < m; ++i) store_as<double>(P->data, P->dtype, b * m * m + perm[i] * m + i, 1.0);
  }
  return Error::Ok;
}

// linalg_householder_product(input (m x n, reflectors below the diagonal), tau (k)):
// the first n columns of H_0 H_1 ... H_{k-1}, m >= n >= k.
Error linalg_householder_product(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* tau = a.tensor(1);
  Tensor* out = a.out(2);
  if (!dense::check_matrix(a, in, false) || !require_contiguous(a, tau)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  if (tau->rank != in->rank - 1) return a.fail("tau must have one dim fewer than input"), a.error();
  const int64_t k = tau->sizes[tau->rank - 1];
  if (m < nn || nn < k) return a.fail("expected input.shape[-2] >= input.shape[-1] >= tau.shape[-1]"), a.error();
  for (int i = 0; i + 1 < tau->rank; ++i) {
    if (tau->sizes[i] != in->sizes[i]) return a.fail("tau's batch dims must match input's"), a.error();
  }
  if (!resize_like(a, out, *in)) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * nn + 1);
  double* c = sc.doubles(m * nn + 1);
  double* t = sc.doubles(k + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * nn, m, nn, w);
    for (int64_t i = 0; i < k; ++i) t[i] = load_as<double>(tau->data, tau->dtype, b * k + i);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < nn; ++j) c[i * nn + j] = i == j ? 1.0 : 0.0;
    dense::ormqr(w, nn, t, k, true, false, c, m, nn);
    dense::store(*out, b * m * nn, m * nn, c);
  }
  return Error::Ok;
}

// linalg_matrix_power(self, n): binary powering in double; n < 0 powers the inverse.
Error linalg_matrix_power(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t e = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->rank < 2 || in->sizes[in->rank - 1] != in->sizes[in->rank - 2]) {
    return a.fail("expected a batch of square matrices"), a.error();
  }
  if (e < 0 && !is_floating(in->dtype)) return a.fail("negative powers need a floating-point input"), a.error();
  if (!resize_like(a, out, *in)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* base = sc.doubles(m * m + 1);
  double* acc = sc.doubles(m * m + 1);
  double* tmp = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  auto mm = [m](const double* x, const double* y, double* r) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t q = 0; q < m; ++q) s += x[i * m + q] * y[q * m + j];
        r[i * m + j] = s;
      }
  };
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, base);
    if (e < 0) {
      for (int64_t i = 0; i < m * m; ++i) tmp[i] = base[i];
      if (dense::lu_factor(tmp, m, m, p) != 0) {
        return ctx.fail(Error::InvalidArgument, "a negative power of a singular matrix does not exist");
      }
      identity(base, m);
      dense::lu_solve_inplace(tmp, p, m, false, base, m);
    }
    identity(acc, m);
    uint64_t r = e < 0 ? static_cast<uint64_t>(-(e + 1)) + 1 : static_cast<uint64_t>(e);
    while (r != 0) {
      if (r & 1) {
        mm(acc, base, tmp);
        for (int64_t i = 0; i < m * m; ++i) acc[i] = tmp[i];
      }
      r >>= 1;
      if (r != 0) {
        mm(base, base, tmp);
        for (int64_t i = 0; i < m * m; ++i) base[i] = tmp[i];
      }
    }
    dense::store(*out, b * m * m, m * m, acc);
  }
  return Error::Ok;
}

// _linalg_check_errors(info, api_name, *, is_matrix) -> (): the error a non-`_ex` linalg op
// raises when its `_ex` form reported a failure (core ATen form: linalg_inv = linalg_inv_ex +
// this check).
Error linalg_check_errors(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* info = a.tensor(0);
  if (!a.ok() || !require_int_out(a, info) || !require_contiguous(a, info)) return a.error();
  for (int64_t i = 0; i < info->numel(); ++i) {
    int64_t v = load_as<int64_t>(info->data, info->dtype, i);
    if (v < 0) return ctx.fail(Error::InvalidArgument, "an argument had an illegal value (info < 0)");
    if (v > 0) {
      return ctx.fail(Error::InvalidArgument,
                      "the factorization failed: the input is singular (or, for Cholesky, not positive-definite)");
    }
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_linalg_check_errors.default", linalg_check_errors);
EMBER_REGISTER_KERNEL("aten::linalg_cholesky_ex.default", linalg_cholesky_ex);
EMBER_REGISTER_KERNEL("aten::linalg_cholesky.default", linalg_cholesky);
EMBER_REGISTER_KERNEL("aten::linalg_inv_ex.default", linalg_inv_ex);
EMBER_REGISTER_KERNEL("aten::linalg_inv.default", linalg_inv);
EMBER_REGISTER_KERNEL("aten::inverse.default", linalg_inv);
EMBER_REGISTER_KERNEL("aten::_linalg_solve_ex.default", linalg_solve_ex_private);
EMBER_REGISTER_KERNEL("aten::linalg_solve_ex.default", linalg_solve_ex);
EMBER_REGISTER_KERNEL("aten::linalg_solve.default", linalg_solve);
EMBER_REGISTER_KERNEL("aten::linalg_solve_triangular.default", linalg_solve_triangular);
EMBER_REGISTER_KERNEL("aten::linalg_det.default", linalg_det);
EMBER_REGISTER_KERNEL("aten::det.default", linalg_det);
EMBER_REGISTER_KERNEL("aten::_linalg_det.default", linalg_det_private);
EMBER_REGISTER_KERNEL("aten::linalg_lu.default", linalg_lu);
EMBER_REGISTER_KERNEL("aten::linalg_householder_product.default", linalg_householder_product);
EMBER_REGISTER_KERNEL("aten::orgqr.default", linalg_householder_product);
EMBER_REGISTER_KERNEL("aten::linalg_matrix_power.default", linalg_matrix_power);

}  // namespace portable
}  // namespace ember
