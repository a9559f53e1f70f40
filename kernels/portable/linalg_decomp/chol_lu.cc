// Cholesky, triangular solve, LU and determinant families, and the matrix exponential:
// cholesky, cholesky_solve, cholesky_inverse, triangular_solve, linalg_lu_factor_ex,
// linalg_lu_factor, _lu_with_info, lu_unpack, linalg_lu_solve, lu_solve, _linalg_slogdet,
// linalg_slogdet, slogdet, logdet,
// linalg_matrix_exp, matrix_exp. Batched, computed in double (dense.h), rounded once.
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

bool require_matrix(KernelArgs& a, const Tensor* t, bool square) {
  if (!a.ok() || t == nullptr) return false;
  if (!require_contiguous(a, t)) return false;
  if (t->rank < 2) return a.fail("expected a tensor with at least 2 dims (batch of matrices)");
  if (!is_floating(t->dtype)) return a.fail("expected a floating-point tensor");
  if (square && t->sizes[t->rank - 1] != t->sizes[t->rank - 2]) return a.fail("expected square matrices");
  return true;
}

// ---------------------------------------------------------------------------------------
// cholesky(self, upper=False)
Error cholesky(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  bool upper = a.bool_value(1);
  Tensor* out = a.out(2);
  if (!require_matrix(a, in, true) || !resize_like(a, out, *in)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    if (dense::cholesky_lower(w, m) != 0) {
      return ctx.fail(Error::InvalidArgument, "the input is not positive-definite");
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < m; ++j)
        store_as<double>(out->data, out->dtype, b * m * m + i * m + j, upper ? w[j * m + i] : w[i * m + j]);
  }
  return Error::Ok;
}

// Loads a triangular factor as lower L (upper: U^T).
void load_lower(const Tensor& t, int64_t off, int64_t m, bool upper, double* l) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      int64_t si = upper ? j : i, sj = upper ? i : j;
      l[i * m + j] = j <= i ? load_as<double>(t.data, t.dtype, off + si * m + sj) : 0.0;
    }
}

// cholesky_solve(self (B), input2 (L or U), upper=False): solves (L L^T) X = B.
Error cholesky_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* B = a.tensor(0);
  const Tensor* L = a.tensor(1);
  bool upper = a.bool_value(2);
  Tensor* out = a.out(3);
  if (!require_matrix(a, B, false) || !require_matrix(a, L, true)) return a.error();
  const int64_t m = L->sizes[L->rank - 1];
  const int64_t rows = B->sizes[B->rank - 2], k = B->sizes[B->rank - 1];
  if (rows != m) return a.fail("B's rows must match the factor's size"), a.error();
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, 2, *L, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  Shape os = plan.batch;
  os.push(m);
  os.push(k);
  if (!resize_to(a, out, os)) return a.error();
  Scratch sc(ctx, a);
  double* l = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    load_lower(*L, plan.index_b(b) * m * m, m, upper, l);
    dense::load(*B, plan.index_a(b) * m * k, m, k, x);
    dense::tri_solve(l, m, m, false, false, false, x, k);
    dense::tri_solve(l, m, m, false, true, false, x, k);
    dense::store(*out, b * m * k, m * k, x);
  }
  return Error::Ok;
}

// cholesky_inverse(self (L or U), upper=False): (L L^T)^-1.
Error cholesky_inverse(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* L = a.tensor(0);
  bool upper = a.bool_value(1);
  Tensor* out = a.out(2);
  if (!require_matrix(a, L, true) || !resize_like(a, out, *L)) return a.error();
  const int64_t m = L->sizes[L->rank - 1];
  Scratch sc(ctx, a);
  double* l = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*L); ++b) {
    load_lower(*L, b * m * m, m, upper, l);
    for (int64_t i = 0; i < m * m; ++i) x[i] = (i % (m + 1) == 0) ? 1.0 : 0.0;
    dense::tri_solve(l, m, m, false, false, false, x, m);
    dense::tri_solve(l, m, m, false, true, false, x, m);
    dense::store(*out, b * m * m, m * m, x);
  }
  return Error::Ok;
}

// triangular_solve(self (B), A, upper=True, transpose=False, unitriangular=False)
//   -> (solution, cloned_coefficient)
Error triangular_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* B = a.tensor(0);
  const Tensor* A = a.tensor(1);
  bool upper = a.bool_value(2), trans = a.bool_value(3), unit = a.bool_value(4);
  Tensor* X = a.out(5);
  Tensor* Ac = a.out(6);
  if (!require_matrix(a, B, false) || !require_matrix(a, A, true)) return a.error();
  const int64_t m = A->sizes[A->rank - 1];
  const int64_t k = B->sizes[B->rank - 1];
  if (B->sizes[B->rank - 2] != m) return a.fail("B's rows must match A's size"), a.error();
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, 2, *A, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  Shape xs = plan.batch, as = plan.batch;
  xs.push(m);
  xs.push(k);
  as.push(m);
  as.push(m);
  if (!resize_to(a, X, xs) || !resize_to(a, Ac, as)) return a.error();
  Scratch sc(ctx, a);
  double* t = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    dense::load(*A, plan.index_b(b) * m * m, m, m, t);
    dense::load(*B, plan.index_a(b) * m * k, m, k, x);
    dense::tri_solve(t, m, m, upper, trans, unit, x, k);
    dense::store(*X, b * m * k, m * k, x);
    dense::store(*Ac, b * m * m, m * m, t);
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------------------
// LU.

Error lu_factor_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool pivot, bool check,
                       Tensor* LU, Tensor* piv, Tensor* info) {
  if (!require_matrix(a, in, false)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  if (!resize_like(a, LU, *in)) return a.error();
  if (!resize_to(a, piv, dense::batch_shape_with(*in, 2, k, 0, 1))) return a.error();
  if (info != nullptr && !resize_to(a, info, dense::batch_shape_with(*in, 2, 0, 0, 0))) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * nn + 1);
  int32_t* p = sc.ints(k + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * nn, m, nn, w);
    int32_t inf = dense::lu_factor(w, m, nn, p, pivot);
    if (check && inf != 0) return ctx.fail(Error::InvalidArgument, "the matrix is singular (LU pivot is zero)");
    dense::store(*LU, b * m * nn, m * nn, w);
    for (int64_t i = 0; i < k; ++i) store_as<int64_t>(piv->data, piv->dtype, b * k + i, p[i]);
    if (info != nullptr) store_as<int64_t>(info->data, info->dtype, b, inf);
  }
  return Error::Ok;
}

// linalg_lu_factor_ex(A, *, pivot=True, check_errors=False) -> (LU, pivots, info)
// linalg_lu_factor_ex and _lu_with_info share one schema shape: (self, pivot, check) ->
// (LU, pivots, info). `honour_check`: _lu_with_info (torch.lu) reports singular matrices
// through info only, whatever check_errors says.
Error lu_factor_entry(KernelContext& ctx, EValue** args, size_t n, bool honour_check) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  bool pivot = a.bool_value(1), check = a.bool_value(2);
  Tensor* LU = a.out(3);
  Tensor* piv = a.out(4);
  Tensor* info = a.out(5);
  if (!a.ok()) return a.error();
  if (!pivot) return ctx.fail(Error::NotSupported, "LU without pivoting is not supported on CPU");
  return lu_factor_common(ctx, a, in, pivot, honour_check && check, LU, piv, info);
}

Error linalg_lu_factor_ex(KernelContext& ctx, EValue** args, size_t n) {
  return lu_factor_entry(ctx, args, n, /*honour_check=*/true);
}

// _lu_with_info(self, pivot=True, check_errors=True) -> (LU, pivots, info)
Error lu_with_info(KernelContext& ctx, EValue** args, size_t n) {
  return lu_factor_entry(ctx, args, n, /*honour_check=*/false);
}

// linalg_lu_factor(A, *, pivot=True) -> (LU, pivots): a singular matrix is an error.
Error linalg_lu_factor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool pivot = a.bool_value(1);
  Tensor* LU = a.out(2);
  Tensor* piv = a.out(3);
  if (!a.ok()) return a.error();
  if (!pivot) return ctx.fail(Error::NotSupported, "LU without pivoting is not supported on CPU");
  return lu_factor_common(ctx, a, in, pivot, true, LU, piv, nullptr);
}

// lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True) -> (P, L, U)
Error lu_unpack(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* LU = a.tensor(0);
  const Tensor* piv = a.tensor(1);
  bool unpack_data = a.bool_value(2), unpack_piv = a.bool_value(3);
  Tensor* P = a.out(4);
  Tensor* L = a.out(5);
  Tensor* U = a.out(6);
  if (!require_matrix(a, LU, false) || !require_contiguous(a, piv)) return a.error();
  const int64_t m = LU->sizes[LU->rank - 2], nn = LU->sizes[LU->rank - 1];
  const int64_t k = m < nn ? m : nn;
  const int64_t batch = dense::batch_count(*LU);
  if (piv->numel() != batch * k) return a.fail("pivots do not match LU_data"), a.error();
  if (unpack_data) {
    if (!resize_to(a, L, dense::batch_shape_with(*LU, 2, m, k)) ||
        !resize_to(a, U, dense::batch_shape_with(*LU, 2, k, nn))) {
      return a.error();
    }
  } else if (!dense::resize_empty(a, L) || !dense::resize_empty(a, U)) {
    return a.error();
  }
  if (unpack_piv) {
    if (!resize_to(a, P, dense::batch_shape_with(*LU, 2, m, m))) return a.error();
  } else if (!dense::resize_empty(a, P)) {
    return a.error();
  }
  Scratch sc(ctx, a);
  int32_t* perm = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t off = b * m * nn;
    if (unpack_data) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < k; ++j) {
          double v = j < i ? load_as<double>(LU->data, LU->dtype, off + i * nn + j) : (i == j ? 1.0 : 0.0);
          store_as<double>(L->data, L->dtype, b * m * k + i * k + j, v);
        }
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < nn; ++j) {
          double v = j >= i ? load_as<double>(LU->data, LU->dtype, off + i * nn + j) : 0.0;
          store_as<double>(U->data, U->dtype, b * k * nn + i * nn + j, v);
        }
    }
    if (unpack_piv) {
      for (int64_t i = 0; i < m; ++i) perm[i] = static_cast<int32_t>(i);
      for (int64_t i = 0; i < k; ++i) {
        int64_t p = load_as<int64_t>(piv->data, piv->dtype, b * k + i) - 1;
        if (p < 0 || p >= m) return ctx.fail(Error::InvalidArgument, "pivot out of range");
        int32_t t = perm[i]; perm[i] = perm[p]; perm[p] = t;
      }
      // P^T A = L U with row i of P^T A = row perm[i] of A, so P[perm[i], i] = 1.
      for (int64_t i = 0; i < m * m; ++i) store_as<double>(P->data, P->dtype, b * m * m + i, 0.0);
      for (int64_t i = 0; i < m; ++i) store_as<double>(P->data, P->dtype, b * m * m + perm[i] * m + i, 1.0);
    }
  }
  return Error::Ok;
}

// Solves with an LU factorisation: left: A X = B (adjoint: A^T X = B); right: X A = B
// (adjoint: X A^T = B), via the transposed left problem.
Error lu_solve_common(KernelContext& ctx, KernelArgs& a, const Tensor* LU, const Tensor* piv,
                      const Tensor* B, bool left, bool adjoint, Tensor* out) {
  if (!require_matrix(a, LU, true) || !require_matrix(a, B, false) || !require_contiguous(a, piv)) {
    return a.error();
  }
  const int64_t m = LU->sizes[LU->rank - 1];
  const int64_t br = B->sizes[B->rank - 2], bc = B->sizes[B->rank - 1];
  if ((left ? br : bc) != m) return a.fail("B's size does not match LU"), a.error();
  dense::BatchPlan plan;
  if (!dense::plan_batches(*B, 2, *LU, 2, &plan)) return a.fail("batch dims do not broadcast"), a.error();
  if (piv->numel() != dense::batch_count(*LU) * m) return a.fail("pivots do not match LU"), a.error();
  Shape os = plan.batch;
  os.push(br);
  os.push(bc);
  if (!resize_to(a, out, os)) return a.error();
  const int64_t k = left ? bc : br;  // right-hand sides
  Scratch sc(ctx, a);
  double* lu = sc.doubles(m * m + 1);
  double* x = sc.doubles(m * k + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < plan.count; ++b) {
    const int64_t ib = plan.index_b(b);
    dense::load(*LU, ib * m * m, m, m, lu);
    for (int64_t i = 0; i < m; ++i) p[i] = static_cast<int32_t>(load_as<int64_t>(piv->data, piv->dtype, ib * m + i));
    const int64_t boff = plan.index_a(b) * br * bc;
    // x (m x k): B for left, B^T for right.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        x[i * k + c] = load_as<double>(B->data, B->dtype, boff + (left ? i * bc + c : c * bc + i));
    // Effective system: left && !adjoint or right && adjoint -> A x = rhs; otherwise A^T x = rhs.
    const bool plain = left != adjoint;
    if (plain) {
      dense::apply_pivots(p, m, true, x, k);
      dense::tri_solve(lu, m, m, false, false, true, x, k);
      dense::tri_solve(lu, m, m, true, false, false, x, k);
    } else {
      dense::tri_solve(lu, m, m, true, true, false, x, k);
      dense::tri_solve(lu, m, m, false, true, true, x, k);
      dense::apply_pivots(p, m, false, x, k);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < k; ++c)
        store_as<double>(out->data, out->dtype, b * br * bc + (left ? i * bc + c : c * bc + i), x[i * k + c]);
  }
  return Error::Ok;
}

// linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False)
Error linalg_lu_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* LU = a.tensor(0);
  const Tensor* piv = a.tensor(1);
  const Tensor* B = a.tensor(2);
  bool left = a.bool_value(3), adjoint = a.bool_value(4);
  Tensor* out = a.out(5);
  if (!a.ok()) return a.error();
  return lu_solve_common(ctx, a, LU, piv, B, left, adjoint, out);
}

// lu_solve(self (B), LU_data, LU_pivots)
Error lu_solve(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* B = a.tensor(0);
  const Tensor* LU = a.tensor(1);
  const Tensor* piv = a.tensor(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  return lu_solve_common(ctx, a, LU, piv, B, true, false, out);
}

// ---------------------------------------------------------------------------------------
// Determinants.

// sign and log|det| of one LU-factorised m x m matrix.
void slogdet_of(const double* lu, const int32_t* p, int64_t m, double* sign, double* logabs) {
  double s = 1.0, l = 0.0;
  for (int64_t i = 0; i < m; ++i) {
    double d = lu[i * m + i];
    if (p[i] != i + 1) s = -s;
    if (d < 0) s = -s;
    if (d == 0.0) {
      *sign = 0.0;
      *logabs = -std::numeric_limits<double>::infinity();
      return;
    }
    l += std::log(std::fabs(d));
  }
  *sign = s;
  *logabs = l;
}

// _linalg_slogdet(A) -> (sign, logabsdet, LU, pivots); linalg_slogdet(A) -> (sign,
// logabsdet) (`full` false: no LU/pivots outputs).
Error slogdet_entry(KernelContext& ctx, EValue** args, size_t n, bool full) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(full ? 5 : 3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* sign = a.out(1);
  Tensor* logabs = a.out(2);
  Tensor* LU = full ? a.out(3) : nullptr;
  Tensor* piv = full ? a.out(4) : nullptr;
  if (!require_matrix(a, in, true)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  Shape bs = dense::batch_shape_with(*in, 2, 0, 0, 0);
  if (!resize_to(a, sign, bs) || !resize_to(a, logabs, bs) ||
      (full && (!resize_like(a, LU, *in) || !resize_to(a, piv, dense::batch_shape_with(*in, 2, m, 0, 1))))) {
    return a.error();
  }
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    dense::lu_factor(w, m, m, p);
    double s, l;
    slogdet_of(w, p, m, &s, &l);
    store_as<double>(sign->data, sign->dtype, b, s);
    store_as<double>(logabs->data, logabs->dtype, b, l);
    if (!full) continue;
    dense::store(*LU, b * m * m, m * m, w);
    for (int64_t i = 0; i < m; ++i) store_as<int64_t>(piv->data, piv->dtype, b * m + i, p[i]);
  }
  return Error::Ok;
}

Error linalg_slogdet_private(KernelContext& ctx, EValue** args, size_t n) { return slogdet_entry(ctx, args, n, true); }
Error linalg_slogdet(KernelContext& ctx, EValue** args, size_t n) { return slogdet_entry(ctx, args, n, false); }

// logdet(self): log(det) (nan for a negative determinant, -inf for zero).
Error logdet(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!require_matrix(a, in, true)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, 0, 0, 0))) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    dense::lu_factor(w, m, m, p);
    double s, l;
    slogdet_of(w, p, m, &s, &l);
    store_as<double>(out->data, out->dtype, b, s < 0 ? std::numeric_limits<double>::quiet_NaN() : l);
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------------------
// Matrix exponential: scaling and squaring with a diagonal Pade approximant of degree 8
// (after scaling ||A||_1 <= 0.5 the truncation error is far below double rounding).

void matmul_sq(const double* x, const double* y, int64_t m, double* out) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double s = 0;
      for (int64_t p = 0; p < m; ++p) s += x[i * m + p] * y[p * m + j];
      out[i * m + j] = s;
    }
}

// expm of the m x m matrix in a (overwritten with the result). work: 6 m^2 doubles, p: m ints.
void expm(double* a, int64_t m, double* work, int32_t* piv) {
  double norm = 0;
  for (int64_t j = 0; j < m; ++j) {
    double c = 0;
    for (int64_t i = 0; i < m; ++i) c += std::fabs(a[i * m + j]);
    norm = c > norm ? c : norm;
  }
  if (!std::isfinite(norm)) {
    for (int64_t i = 0; i < m * m; ++i) a[i] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  int s = 0;
  while (norm > 0.5 && s < 1000) { norm *= 0.5; ++s; }
  const double scale = std::ldexp(1.0, -s);
  double* x = work;             // scaled A
  double* pw = x + m * m;       // current power
  double* tmp = pw + m * m;
  double* num = tmp + m * m;
  double* den = num + m * m;
  for (int64_t i = 0; i < m * m; ++i) x[i] = a[i] * scale;
  // Pade(q, q) coefficients c_j = (2q - j)! q! / ((2q)! j! (q - j)!).
  const int q = 8;
  double c = 1.0;
  for (int64_t i = 0; i < m * m; ++i) {
    double id = (i % (m + 1) == 0) ? 1.0 : 0.0;
    num[i] = id;
    den[i] = id;
    pw[i] = id;
  }
  for (int j = 1; j <= q; ++j) {
    c = c * static_cast<double>(q - j + 1) / static_cast<double>(j * (2 * q - j + 1));
    matmul_sq(pw, x, m, tmp);
    for (int64_t i = 0; i < m * m; ++i) {
      pw[i] = tmp[i];
      num[i] += c * tmp[i];
      den[i] += ((j & 1) ? -c : c) * tmp[i];
    }
  }
  // Solve den * R = num.
  dense::lu_factor(den, m, m, piv);
  dense::apply_pivots(piv, m, true, num, m);
  dense::tri_solve(den, m, m, false, false, true, num, m);
  dense::tri_solve(den, m, m, true, false, false, num, m);
  for (int k = 0; k < s; ++k) {
    matmul_sq(num, num, m, tmp);
    for (int64_t i = 0; i < m * m; ++i) num[i] = tmp[i];
  }
  for (int64_t i = 0; i < m * m; ++i) a[i] = num[i];
}

// linalg_matrix_exp(self) / matrix_exp(self)
Error matrix_exp(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!require_matrix(a, in, true) || !resize_like(a, out, *in)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * m + 1);
  double* work = sc.doubles(6 * m * m + 1);
  int32_t* p = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * m, m, m, w);
    expm(w, m, work, p);
    dense::store(*out, b * m * m, m * m, w);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::cholesky.default", cholesky);
EMBER_REGISTER_KERNEL("aten::cholesky_solve.default", cholesky_solve);
EMBER_REGISTER_KERNEL("aten::cholesky_inverse.default", cholesky_inverse);
EMBER_REGISTER_KERNEL("aten::triangular_solve.default", triangular_solve);
EMBER_REGISTER_KERNEL("aten::linalg_lu_factor_ex.default", linalg_lu_factor_ex);
EMBER_REGISTER_KERNEL("aten::_lu_with_info.default", lu_with_info);
EMBER_REGISTER_KERNEL("aten::lu_unpack.default", lu_unpack);
EMBER_REGISTER_KERNEL("aten::linalg_lu_solve.default", linalg_lu_solve);
EMBER_REGISTER_KERNEL("aten::lu_solve.default", lu_solve);
EMBER_REGISTER_KERNEL("aten::_linalg_slogdet.default", linalg_slogdet_private);
EMBER_REGISTER_KERNEL("aten::linalg_slogdet.default", linalg_slogdet);
EMBER_REGISTER_KERNEL("aten::slogdet.default", linalg_slogdet);
EMBER_REGISTER_KERNEL("aten::linalg_lu_factor.default", linalg_lu_factor);
EMBER_REGISTER_KERNEL("aten::logdet.default", logdet);
EMBER_REGISTER_KERNEL("aten::linalg_matrix_exp.default", matrix_exp);
EMBER_REGISTER_KERNEL("aten::matrix_exp.default", matrix_exp);

}  // namespace portable
}  // namespace ember
