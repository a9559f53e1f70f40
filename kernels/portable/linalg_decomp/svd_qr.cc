// SVD and QR families: _linalg_svd, linalg_svd, svd, linalg_matrix_norm.str_ord ('fro',
// 'nuc'), linalg_pinv (.atol_rtol_tensor, .atol_rtol_float; hermitian through the symmetric
// eigen-decomposition), pinverse, linalg_svdvals, linalg_matrix_rank (.atol_rtol_tensor,
// .atol_rtol_float), linalg_cond, linalg_polar, linalg_qr, qr, geqrf, ormqr.
// Batched over leading dims; computed in double (dense.h) and rounded once. SVD signs and
// QR signs follow LAPACK's conventions (Householder beta = -sign(alpha) * norm; Golub-Kahan
// bidiagonalisation + implicit QR), which is what PyTorch's CPU results show.
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

bool require_matrix(KernelArgs& a, const Tensor* t) {
  if (!a.ok() || t == nullptr) return false;
  if (!require_contiguous(a, t)) return false;
  if (t->rank < 2) return a.fail("expected a tensor with at least 2 dims (batch of matrices)");
  if (!is_floating(t->dtype)) return a.fail("expected a floating-point tensor");
  return true;
}

// SVD of one m x n matrix at `src` (double, destroyed): writes s[k], u (m x ucols) and
// vh (vrows x n), ucols/vrows = k, or m/n when `full`. work: svd_scratch(m, n) doubles.
int64_t svd_scratch(int64_t m, int64_t n) {
  int64_t big = m > n ? m : n, small = m < n ? m : n;
  return big * small + big * big + small * small + big * small + dense::svd_work_size(big, small) + 16;
}
bool svd_one(const double* src, int64_t m, int64_t n, bool full, double* s, double* u, double* vh,
             double* work) {
  const int64_t k = m < n ? m : n;
  if (k == 0) {
    // Empty: identity bases when full.
    for (int64_t i = 0; i < m * (full ? m : 0); ++i) u[i] = (i % (m + 1) == 0) ? 1.0 : 0.0;
    for (int64_t i = 0; i < n * (full ? n : 0); ++i) vh[i] = (i % (n + 1) == 0) ? 1.0 : 0.0;
    return true;
  }
  if (m >= n) {
    double* a = work;
    double* ut = a + m * n;
    double* vt = ut + m * m;
    double* w = vt + n * n;
    for (int64_t i = 0; i < m * n; ++i) a[i] = src[i];
    const int64_t ucols = full ? m : n;
    if (!dense::svd_tall(a, m, n, full, s, ut, vt, w)) return false;
    for (int64_t i = 0; i < m * ucols; ++i) u[i] = ut[i];
    for (int64_t i = 0; i < n * n; ++i) vh[i] = vt[i];
    return true;
  }
  // Wide: SVD of A^T = U' S V'^T, so U = V' and Vh = U'^T.
  double* at = work;
  double* ut = at + m * n;   // n x (full ? n : m)
  double* vt = ut + n * n;   // m x m
  double* w = vt + m * m;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) at[j * m + i] = src[i * n + j];
  const int64_t ucols = full ? n : m;
  if (!dense::svd_tall(at, n, m, full, s, ut, vt, w)) return false;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) u[i * m + j] = vt[j * m + i];
  for (int64_t i = 0; i < ucols; ++i)
    for (int64_t j = 0; j < n; ++j) vh[i * n + j] = ut[j * ucols + i];
  return true;
}

// Shared by _linalg_svd / linalg_svd / svd. v_transposed: write V (n x vrows) instead of Vh.
Error svd_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool full, bool compute_uv,
                 Tensor* U, Tensor* S, Tensor* V, bool v_transposed, bool zero_fill_uv) {
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], n = in->sizes[in->rank - 1];
  const int64_t k = m < n ? m : n;
  const int64_t ucols = full ? m : k, vrows = full ? n : k;
  const int64_t batch = dense::batch_count(*in);
  if (!resize_to(a, S, dense::batch_shape_with(*in, 2, k, 0, 1))) return a.error();
  if (compute_uv) {
    if (!resize_to(a, U, dense::batch_shape_with(*in, 2, m, ucols))) return a.error();
    Shape vs = v_transposed ? dense::batch_shape_with(*in, 2, n, vrows) : dense::batch_shape_with(*in, 2, vrows, n);
    if (!resize_to(a, V, vs)) return a.error();
  } else if (zero_fill_uv) {
    if (!resize_to(a, U, dense::batch_shape_with(*in, 2, m, m))) return a.error();
    if (!resize_to(a, V, dense::batch_shape_with(*in, 2, n, n))) return a.error();
    for (int64_t i = 0; i < U->numel(); ++i) store_as<double>(U->data, U->dtype, i, 0.0);
    for (int64_t i = 0; i < V->numel(); ++i) store_as<double>(V->data, V->dtype, i, 0.0);
  } else {
    if (!dense::resize_empty(a, U) || !dense::resize_empty(a, V)) return a.error();
  }
  Scratch sc(ctx, a);
  double* src = sc.doubles(m * n);
  double* s = sc.doubles(k + 1);
  double* u = sc.doubles(m * m + 1);
  double* vh = sc.doubles(n * n + 1);
  double* work = sc.doubles(svd_scratch(m, n));
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < batch; ++b) {
    dense::load(*in, b * m * n, m, n, src);
    if (!svd_one(src, m, n, full, s, u, vh, work)) return ctx.fail(Error::Internal, "SVD did not converge");
    dense::store(*S, b * k, k, s);
    if (!compute_uv) continue;
    dense::store(*U, b * m * ucols, m * ucols, u);
    if (v_transposed) {
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < vrows; ++j)
          store_as<double>(V->data, V->dtype, b * n * vrows + i * vrows + j, vh[j * n + i]);
    } else {
      dense::store(*V, b * vrows * n, vrows * n, vh);
    }
  }
  return Error::Ok;
}

// _linalg_svd(A, full_matrices=False, compute_uv=True, *, driver=None) -> (U, S, Vh)
Error linalg_svd_private(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  bool full = a.bool_value(1), uv = a.bool_value(2);
  Tensor* U = a.out(4);
  Tensor* S = a.out(5);
  Tensor* V = a.out(6);
  if (!a.ok()) return a.error();
  return svd_common(ctx, a, in, full, uv, U, S, V, false, false);
}

// linalg_svd(A, full_matrices=True, *, driver=None) -> (U, S, Vh)
Error linalg_svd(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  bool full = a.bool_value(1);
  Tensor* U = a.out(3);
  Tensor* S = a.out(4);
  Tensor* V = a.out(5);
  if (!a.ok()) return a.error();
  return svd_common(ctx, a, in, full, true, U, S, V, false, false);
}

// svd(self, some=True, compute_uv=True) -> (U, S, V)
Error svd(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  bool some = a.bool_value(1), uv = a.bool_value(2);
  Tensor* U = a.out(3);
  Tensor* S = a.out(4);
  Tensor* V = a.out(5);
  if (!a.ok()) return a.error();
  return svd_common(ctx, a, in, !some, uv, U, S, V, true, true);
}

// linalg_matrix_norm.str_ord(self, ord='fro', dim=[-2,-1], keepdim=False, *, dtype=None)
Error matrix_norm_str(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> dims = a.int_list(2);
  bool keepdim = a.bool_value(3);
  Tensor* out = a.out(5);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  const bool nuc = a.string_is(1, "nuc");
  if (!nuc && !a.string_is(1, "fro")) return a.fail("ord must be 'fro' or 'nuc'"), a.error();
  if (dims.size() != 2) return a.fail("dim must have two entries"), a.error();
  int64_t d0 = wrap_dim(dims[0], in->rank), d1 = wrap_dim(dims[1], in->rank);
  if (d0 < 0 || d1 < 0 || d0 == d1 || in->rank < 2) return a.fail("invalid dims"), a.error();
  Shape os;
  int64_t outer_sizes[kMaxRank], outer_strides[kMaxRank];
  int outer_rank = 0;
  int64_t strides[kMaxRank];
  contiguous_strides(in->sizes, in->rank, strides);
  for (int d = 0; d < in->rank; ++d) {
    if (d == d0 || d == d1) {
      if (keepdim) os.push(1);
      continue;
    }
    os.push(in->sizes[d]);
    outer_sizes[outer_rank] = in->sizes[d];
    outer_strides[outer_rank++] = strides[d];
  }
  if (!resize_to(a, out, os)) return a.error();
  const int64_t m = in->sizes[d0], nn = in->sizes[d1];
  Scratch sc(ctx, a);
  double* mat = sc.doubles(m * nn);
  double* s = nuc ? sc.doubles((m < nn ? m : nn) + 1) : nullptr;
  double* u = nuc ? sc.doubles(m * m + 1) : nullptr;
  double* vh = nuc ? sc.doubles(nn * nn + 1) : nullptr;
  double* work = nuc ? sc.doubles(svd_scratch(m, nn)) : nullptr;
  if (!a.ok()) return a.error();
  const int64_t total = os.numel();
  int64_t idx[kMaxRank] = {};
  for (int64_t o = 0; o < total; ++o) {
    int64_t base = 0;
    for (int d = 0; d < outer_rank; ++d) base += idx[d] * outer_strides[d];
    double result = 0;
    if (!nuc) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < nn; ++j) {
          double v = load_as<double>(in->data, in->dtype, base + i * strides[d0] + j * strides[d1]);
          result += v * v;
        }
      result = std::sqrt(result);
    } else {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < nn; ++j)
          mat[i * nn + j] = load_as<double>(in->data, in->dtype, base + i * strides[d0] + j * strides[d1]);
      if (!svd_one(mat, m, nn, false, s, u, vh, work)) return ctx.fail(Error::Internal, "SVD did not converge");
      for (int64_t i = 0; i < (m < nn ? m : nn); ++i) result += s[i];
    }
    store_as<double>(out->data, out->dtype, o, result);
    for (int d = outer_rank - 1; d >= 0; --d) {
      if (++idx[d] < outer_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return Error::Ok;
}

// Value of an optional tolerance tensor for batch element b (numel 1 or one per batch).
bool tol_value(const Tensor* t, int64_t b, double* v) {
  if (t == nullptr) return false;
  int64_t cnt = t->numel();
  if (cnt == 0) return false;
  *v = load_as<double>(t->data, t->dtype, cnt == 1 ? 0 : b % cnt);
  return true;
}

// Default tolerances of pinv / matrix_rank (PyTorch): rtol = eps(dtype) * max(m, n) unless
// atol is given and positive (then 0); atol = 0. The threshold is max(atol, rtol * largest).
double tolerance(const Tensor* in, const Tensor* atol_t, const Tensor* rtol_t, int64_t b, double largest) {
  const int64_t m = in->sizes[in->rank - 2], n = in->sizes[in->rank - 1];
  const double eps = in->dtype == ScalarType::Float64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  double atol = 0, rtol = 0;
  bool has_atol = tol_value(atol_t, b, &atol);
  bool has_rtol = tol_value(rtol_t, b, &rtol);
  if (!has_rtol) rtol = (has_atol && atol > 0) ? 0.0 : eps * static_cast<double>(m > n ? m : n);
  if (!has_atol) atol = 0;
  return atol > rtol * largest ? atol : rtol * largest;
}

// Hermitian inputs use the eigen-decomposition of the lower triangle (as PyTorch does):
// pinv = U diag(1/w where |w| > tol) U^T.
Error pinv_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, const Tensor* atol_t,
                  const Tensor* rtol_t, bool hermitian, Tensor* out) {
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], n = in->sizes[in->rank - 1];
  const int64_t k = m < n ? m : n;
  if (hermitian && m != n) return a.fail("hermitian=True needs square matrices"), a.error();
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, n, m))) return a.error();
  Scratch sc(ctx, a);
  double* src = sc.doubles(m * n);
  double* s = sc.doubles(k + 1);
  double* u = sc.doubles(m * m + 1);
  double* vh = sc.doubles(n * n + 1);
  double* res = sc.doubles(m * n + 1);
  double* work = sc.doubles(svd_scratch(m, n));
  if (!a.ok()) return a.error();
  const int64_t batch = dense::batch_count(*in);
  for (int64_t b = 0; b < batch; ++b) {
    dense::load(*in, b * m * n, m, n, src);
    if (hermitian) {
      if (!dense::sym_eig(src, n, true, s, u, work)) return ctx.fail(Error::Internal, "eigh did not converge");
      double largest = 0;
      for (int64_t p = 0; p < n; ++p) largest = std::fmax(largest, std::fabs(s[p]));
      const double thr = tolerance(in, atol_t, rtol_t, b, largest);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < n; ++p) {
            if (std::fabs(s[p]) > thr) acc += u[i * n + p] / s[p] * u[j * n + p];
          }
          res[i * n + j] = acc;
        }
      dense::store(*out, b * m * n, m * n, res);
      continue;
    }
    if (!svd_one(src, m, n, false, s, u, vh, work)) return ctx.fail(Error::Internal, "SVD did not converge");
    const double thr = tolerance(in, atol_t, rtol_t, b, k > 0 ? s[0] : 0.0);
    // pinv = V diag(1/s) U^T: res[j][i] = sum_p vh[p][j] / s[p] * u[i][p].
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          if (!(s[p] > thr)) continue;
          acc += vh[p * n + j] / s[p] * u[i * k + p];
        }
        res[j * m + i] = acc;
      }
    dense::store(*out, b * m * n, m * n, res);
  }
  return Error::Ok;
}

// A 0-d double tensor over *v (tolerances given as floats).
struct Float64Scalar {
  double v = 0;
  int64_t no_sizes[1] = {0};
  Tensor t;
  explicit Float64Scalar(double x) : v(x) {
    t.dtype = ScalarType::Float64;
    t.rank = 0;
    t.sizes = no_sizes;
    t.max_sizes = no_sizes;
    t.data = &v;
    t.capacity_bytes = sizeof(double);
  }
  Float64Scalar(const Float64Scalar&) = delete;
  Float64Scalar& operator=(const Float64Scalar&) = delete;
};

// linalg_pinv.atol_rtol_tensor(self, *, atol=None, rtol=None, hermitian=False)
Error linalg_pinv(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* atol = a.optional_tensor(1);
  const Tensor* rtol = a.optional_tensor(2);
  bool hermitian = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  return pinv_common(ctx, a, in, atol, rtol, hermitian, out);
}

// linalg_pinv.atol_rtol_float(self, *, atol=None, rtol=None, hermitian=False)
Error linalg_pinv_float(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  double atol = 0, rtol = 0;
  bool has_atol = a.optional_scalar(1, &atol), has_rtol = a.optional_scalar(2, &rtol);
  bool hermitian = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  Float64Scalar at(atol), rt(rtol);
  return pinv_common(ctx, a, in, has_atol ? &at.t : nullptr, has_rtol ? &rt.t : nullptr, hermitian, out);
}

// pinverse(self, rcond=1e-15): linalg_pinv with atol = 0, rtol = rcond.
Error pinverse(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  double rcond = a.scalar(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  Float64Scalar zt(0.0), rt(rcond);
  return pinv_common(ctx, a, in, &zt.t, &rt.t, false, out);
}

// ---------------------------------------------------------------------------------------
// Singular-value and spectral functions: linalg_svdvals, linalg_matrix_rank, linalg_cond.

// Singular values (descending) of batch element b into s[min(m, n)]; hermitian: |eigenvalues|
// sorted descending (square only).
bool spectrum(const Tensor& in, int64_t b, bool hermitian, double* src, double* s, double* u, double* vh,
              double* work) {
  const int64_t m = in.sizes[in.rank - 2], n = in.sizes[in.rank - 1];
  dense::load(in, b * m * n, m, n, src);
  if (!hermitian) return svd_one(src, m, n, false, s, u, vh, work);
  if (!dense::sym_eig(src, n, true, s, u, work)) return false;
  for (int64_t i = 0; i < n; ++i) s[i] = std::fabs(s[i]);
  for (int64_t i = 0; i + 1 < n; ++i)
    for (int64_t j = i + 1; j < n; ++j)
      if (s[j] > s[i]) { double t = s[i]; s[i] = s[j]; s[j] = t; }
  return true;
}

struct SpectrumScratch {
  double* src = nullptr;
  double* s = nullptr;
  double* u = nullptr;
  double* vh = nullptr;
  double* work = nullptr;
  bool get(Scratch& sc, KernelArgs& a, int64_t m, int64_t n) {
    const int64_t k = m < n ? m : n;
    src = sc.doubles(m * n + 1);
    s = sc.doubles(k + 1);
    u = sc.doubles(m * m + 1);
    vh = sc.doubles(n * n + 1);
    work = sc.doubles(svd_scratch(m, n));
    return a.ok();
  }
};

// linalg_svdvals(A, *, driver=None)
Error linalg_svdvals(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(2);
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, k, 0, 1))) return a.error();
  Scratch sc(ctx, a);
  SpectrumScratch w;
  if (!w.get(sc, a, m, nn)) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    if (!spectrum(*in, b, false, w.src, w.s, w.u, w.vh, w.work)) return ctx.fail(Error::Internal, "SVD did not converge");
    dense::store(*out, b * k, k, w.s);
  }
  return Error::Ok;
}

// Number of singular values (hermitian: |eigenvalues|) above max(atol, rtol * largest).
Error matrix_rank_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, const Tensor* atol_t,
                         const Tensor* rtol_t, bool hermitian, Tensor* out) {
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  if (hermitian && m != nn) return a.fail("hermitian=True needs square matrices"), a.error();
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, 0, 0, 0))) return a.error();
  Scratch sc(ctx, a);
  SpectrumScratch w;
  if (!w.get(sc, a, m, nn)) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    if (!spectrum(*in, b, hermitian, w.src, w.s, w.u, w.vh, w.work)) {
      return ctx.fail(Error::Internal, "SVD did not converge");
    }
    const double thr = tolerance(in, atol_t, rtol_t, b, k > 0 ? w.s[0] : 0.0);
    int64_t rank = 0;
    for (int64_t i = 0; i < k; ++i) rank += w.s[i] > thr ? 1 : 0;
    store_as<int64_t>(out->data, out->dtype, b, rank);
  }
  return Error::Ok;
}

// linalg_matrix_rank.atol_rtol_tensor(input, *, atol=None, rtol=None, hermitian=False)
Error matrix_rank_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* atol = a.optional_tensor(1);
  const Tensor* rtol = a.optional_tensor(2);
  bool hermitian = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  return matrix_rank_common(ctx, a, in, atol, rtol, hermitian, out);
}

// linalg_matrix_rank.atol_rtol_float(self, *, atol=None, rtol=None, hermitian=False)
Error matrix_rank_float(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  double atol = 0, rtol = 0;
  bool has_atol = a.optional_scalar(1, &atol), has_rtol = a.optional_scalar(2, &rtol);
  bool hermitian = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  Float64Scalar at(atol), rt(rtol);
  return matrix_rank_common(ctx, a, in, has_atol ? &at.t : nullptr, has_rtol ? &rt.t : nullptr, hermitian, out);
}

// linalg_cond(self, p=None): p None / 2 / -2 from the singular values (largest / smallest,
// or its inverse); p = 1, -1, inf, -inf as norm(A) * norm(inv(A)) (square only; inf for a
// singular matrix).
Error linalg_cond(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  double p = 2.0;
  a.optional_scalar(1, &p);
  Tensor* out = a.out(2);
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  const bool spectral = p == 2.0 || p == -2.0;
  if (!spectral && !(p == 1.0 || p == -1.0 || std::isinf(p))) {
    return a.fail("ord must be None, 2, -2, 1, -1, inf or -inf"), a.error();
  }
  if (!spectral && m != nn) return a.fail("this ord needs square matrices"), a.error();
  if (!resize_to(a, out, dense::batch_shape_with(*in, 2, 0, 0, 0))) return a.error();
  Scratch sc(ctx, a);
  SpectrumScratch w;
  if (!w.get(sc, a, m, nn)) return a.error();
  double* inv = sc.doubles(m * m + 1);
  int32_t* piv = sc.ints(m + 1);
  if (!a.ok()) return a.error();
  const double inf = std::numeric_limits<double>::infinity();
  // Matrix p-norm: max (p = 1, inf) or min (p = -1, -inf) of the column (1) / row (inf) sums.
  auto norm = [&](const double* x) {
    const bool cols = std::fabs(p) == 1.0, largest = p > 0;
    double best = largest ? 0.0 : inf;
    for (int64_t i = 0; i < m; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < m; ++j) sum += std::fabs(cols ? x[j * m + i] : x[i * m + j]);
      best = largest ? std::fmax(best, sum) : std::fmin(best, sum);
    }
    return best;
  };
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    double c = 0;
    if (spectral) {
      if (!spectrum(*in, b, false, w.src, w.s, w.u, w.vh, w.work)) return ctx.fail(Error::Internal, "SVD did not converge");
      if (k == 0) c = 0;
      else c = p > 0 ? w.s[0] / w.s[k - 1] : w.s[k - 1] / w.s[0];
    } else {
      dense::load(*in, b * m * m, m, m, w.src);
      const double na = norm(w.src);
      if (dense::lu_factor(w.src, m, m, piv) != 0) {
        c = inf;
      } else {
        for (int64_t i = 0; i < m * m; ++i) inv[i] = (i % (m + 1) == 0) ? 1.0 : 0.0;
        dense::lu_solve_inplace(w.src, piv, m, false, inv, m);
        c = na * norm(inv);
      }
    }
    store_as<double>(out->data, out->dtype, b, c);
  }
  return Error::Ok;
}

// linalg_polar(A) -> (U, H): A = U H for m x n A, m >= n, from A = W S Vh: U = W Vh (m x n,
// orthonormal columns), H = Vh^T S Vh (n x n, symmetric positive-semidefinite).
Error linalg_polar(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* U = a.out(1);
  Tensor* H = a.out(2);
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  if (m < nn) return a.fail("expected A.size(-2) >= A.size(-1)"), a.error();
  if (!resize_like(a, U, *in) || !resize_to(a, H, dense::batch_shape_with(*in, 2, nn, nn))) return a.error();
  Scratch sc(ctx, a);
  SpectrumScratch w;
  if (!w.get(sc, a, m, nn)) return a.error();
  double* res = sc.doubles(m * nn + 1);
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    dense::load(*in, b * m * nn, m, nn, w.src);
    if (!svd_one(w.src, m, nn, false, w.s, w.u, w.vh, w.work)) return ctx.fail(Error::Internal, "SVD did not converge");
    for (int64_t i = 0; i < m; ++i)  // U = W (m x n) Vh (n x n)
      for (int64_t j = 0; j < nn; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < nn; ++p) acc += w.u[i * nn + p] * w.vh[p * nn + j];
        res[i * nn + j] = acc;
      }
    dense::store(*U, b * m * nn, m * nn, res);
    for (int64_t i = 0; i < nn; ++i)  // H = Vh^T S Vh
      for (int64_t j = 0; j < nn; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < nn; ++p) acc += w.vh[p * nn + i] * w.s[p] * w.vh[p * nn + j];
        res[i * nn + j] = acc;
      }
    dense::store(*H, b * nn * nn, nn * nn, res);
  }
  return Error::Ok;
}

// ---------------------------------------------------------------------------------------
// QR.

enum class QrMode { Reduced, Complete, ROnly };

Error qr_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, QrMode mode, Tensor* Q, Tensor* R) {
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], n = in->sizes[in->rank - 1];
  const int64_t k = m < n ? m : n;
  const int64_t qc = mode == QrMode::Complete ? m : k;
  const int64_t rr = mode == QrMode::Complete ? m : k;
  if (mode == QrMode::ROnly) {
    if (!dense::resize_empty(a, Q)) return a.error();
  } else if (!resize_to(a, Q, dense::batch_shape_with(*in, 2, m, qc))) {
    return a.error();
  }
  if (!resize_to(a, R, dense::batch_shape_with(*in, 2, rr, n))) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * n + 1);
  double* tau = sc.doubles(k + 1);
  double* q = sc.doubles(m * qc + 1);
  if (!a.ok()) return a.error();
  const int64_t batch = dense::batch_count(*in);
  for (int64_t b = 0; b < batch; ++b) {
    dense::load(*in, b * m * n, m, n, w);
    dense::geqrf(w, m, n, tau);
    for (int64_t i = 0; i < rr; ++i)
      for (int64_t j = 0; j < n; ++j)
        store_as<double>(R->data, R->dtype, b * rr * n + i * n + j, j >= i && i < m ? w[i * n + j] : 0.0);
    if (mode == QrMode::ROnly) continue;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < qc; ++j) q[i * qc + j] = i == j ? 1.0 : 0.0;
    dense::ormqr(w, n, tau, k, true, false, q, m, qc);
    dense::store(*Q, b * m * qc, m * qc, q);
  }
  return Error::Ok;
}

// linalg_qr(A, mode='reduced') -> (Q, R)
Error linalg_qr(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* Q = a.out(2);
  Tensor* R = a.out(3);
  if (!a.ok()) return a.error();
  QrMode mode = QrMode::Reduced;
  if (a.string_is(1, "complete")) mode = QrMode::Complete;
  else if (a.string_is(1, "r")) mode = QrMode::ROnly;
  else if (!a.string_is(1, "reduced")) return a.fail("mode must be 'reduced', 'complete' or 'r'"), a.error();
  return qr_common(ctx, a, in, mode, Q, R);
}

// qr(self, some=True) -> (Q, R)
Error qr(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool some = a.bool_value(1);
  Tensor* Q = a.out(2);
  Tensor* R = a.out(3);
  if (!a.ok()) return a.error();
  return qr_common(ctx, a, in, some ? QrMode::Reduced : QrMode::Complete, Q, R);
}

// geqrf(self) -> (a, tau)
Error geqrf(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  Tensor* tau_out = a.out(2);
  if (!require_matrix(a, in)) return a.error();
  const int64_t m = in->sizes[in->rank - 2], nn = in->sizes[in->rank - 1];
  const int64_t k = m < nn ? m : nn;
  if (!resize_like(a, out, *in) || !resize_to(a, tau_out, dense::batch_shape_with(*in, 2, k, 0, 1))) {
    return a.error();
  }
  Scratch sc(ctx, a);
  double* w = sc.doubles(m * nn + 1);
  double* tau = sc.doubles(k + 1);
  if (!a.ok()) return a.error();
  const int64_t batch = dense::batch_count(*in);
  for (int64_t b = 0; b < batch; ++b) {
    dense::load(*in, b * m * nn, m, nn, w);
    dense::geqrf(w, m, nn, tau);
    dense::store(*out, b * m * nn, m * nn, w);
    dense::store(*tau_out, b * k, k, tau);
  }
  return Error::Ok;
}

// ormqr(self, input2 (tau), input3 (C), left=True, transpose=False) -> op(Q) C or C op(Q)
Error ormqr(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* A = a.tensor(0);
  const Tensor* tau_t = a.tensor(1);
  const Tensor* C = a.tensor(2);
  bool left = a.bool_value(3), trans = a.bool_value(4);
  Tensor* out = a.out(5);
  if (!require_matrix(a, A) || !require_matrix(a, C) || !require_contiguous(a, tau_t)) return a.error();
  if (tau_t->rank < 1) return a.fail("tau must have at least one dim"), a.error();
  const int64_t ma = A->sizes[A->rank - 2], na = A->sizes[A->rank - 1];
  const int64_t k = tau_t->sizes[tau_t->rank - 1];
  const int64_t rows = C->sizes[C->rank - 2], cols = C->sizes[C->rank - 1];
  if ((left ? rows : cols) != ma) return a.fail("input3's size does not match input's rows"), a.error();
  if (k > ma || k > na) return a.fail("tau is longer than the number of reflectors"), a.error();
  if (!resize_like(a, out, *C)) return a.error();
  Scratch sc(ctx, a);
  double* w = sc.doubles(ma * na + 1);
  double* tau = sc.doubles(k + 1);
  double* c = sc.doubles(rows * cols + 1);
  if (!a.ok()) return a.error();
  const int64_t batch = dense::batch_count(*C);
  const int64_t batch_a = dense::batch_count(*A);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t ba = batch_a == batch ? b : 0;
    dense::load(*A, ba * ma * na, ma, na, w);
    dense::load(*tau_t, ba * k, 1, k, tau);
    dense::load(*C, b * rows * cols, rows, cols, c);
    dense::ormqr(w, na, tau, k, left, trans, c, rows, cols);
    dense::store(*out, b * rows * cols, rows * cols, c);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::_linalg_svd.default", linalg_svd_private);
EMBER_REGISTER_KERNEL("aten::linalg_svd.default", linalg_svd);
EMBER_REGISTER_KERNEL("aten::svd.default", svd);
EMBER_REGISTER_KERNEL("aten::linalg_matrix_norm.str_ord", matrix_norm_str);
EMBER_REGISTER_KERNEL("aten::linalg_pinv.atol_rtol_tensor", linalg_pinv);
EMBER_REGISTER_KERNEL("aten::linalg_pinv.atol_rtol_float", linalg_pinv_float);
EMBER_REGISTER_KERNEL("aten::linalg_svdvals.default", linalg_svdvals);
EMBER_REGISTER_KERNEL("aten::linalg_matrix_rank.atol_rtol_tensor", matrix_rank_tensor);
EMBER_REGISTER_KERNEL("aten::linalg_matrix_rank.atol_rtol_float", matrix_rank_float);
EMBER_REGISTER_KERNEL("aten::linalg_cond.default", linalg_cond);
EMBER_REGISTER_KERNEL("aten::linalg_polar.default", linalg_polar);
EMBER_REGISTER_KERNEL("aten::pinverse.default", pinverse);
EMBER_REGISTER_KERNEL("aten::linalg_qr.default", linalg_qr);
EMBER_REGISTER_KERNEL("aten::qr.default", qr);
EMBER_REGISTER_KERNEL("aten::geqrf.default", geqrf);
EMBER_REGISTER_KERNEL("aten::ormqr.default", ormqr);

}  // namespace portable
}  // namespace ember
