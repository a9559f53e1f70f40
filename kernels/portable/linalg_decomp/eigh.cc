// Symmetric eigen-decomposition: _linalg_eigh, linalg_eigh, linalg_eigvalsh and
// linalg_matrix_sqrth, by LAPACK's ?syevd path (syevd.h): float32 inputs compute in float as
// ssyevd does (same branch decisions, so the same eigenvector signs as PyTorch's), other
// dtypes in double. Eigenvalues ascending; UPLO picks the triangle read and its reduction.
#include <cmath>

#include "kernels/portable/linalg_decomp/dense.h"
#include "kernels/portable/linalg_decomp/syevd.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace dense {

bool sym_eig(double* a, int64_t n, bool lower, double* w, double* v, double* work) {
  return syevd<double>(a, n, lower, w, v, work);
}

}  // namespace dense

namespace {

using dense::Scratch;

bool uplo_lower(KernelArgs& a, size_t i) {
  if (a.string_is(i, "L") || a.string_is(i, "l")) return true;
  if (a.string_is(i, "U") || a.string_is(i, "u")) return false;
  a.fail("UPLO must be 'L' or 'U'");
  return true;
}

// One batch of eigh in the computing type T (vecs null: values only).
template <typename T>
Error eigh_typed(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool lower, Tensor* vals, Tensor* vecs) {
  const int64_t m = in->sizes[in->rank - 1];
  Scratch sc(ctx, a);
  T* w = sc.array<T>(m * m + 1);
  T* ev = sc.array<T>(m + 1);
  T* v = sc.array<T>(m * m + 1);
  T* work = sc.array<T>(dense::syevd_work(m));
  if (!a.ok()) return a.error();
  for (int64_t b = 0; b < dense::batch_count(*in); ++b) {
    for (int64_t i = 0; i < m * m; ++i) w[i] = load_as<T>(in->data, in->dtype, b * m * m + i);
    if (!dense::syevd<T>(w, m, lower, ev, v, work)) {
      return ctx.fail(Error::InvalidArgument, "the eigenvalue algorithm did not converge (non-finite input?)");
    }
    for (int64_t i = 0; i < m; ++i) store_as<T>(vals->data, vals->dtype, b * m + i, ev[i]);
    if (vecs != nullptr) {
      for (int64_t i = 0; i < m * m; ++i) store_as<T>(vecs->data, vecs->dtype, b * m * m + i, v[i]);
    }
  }
  return Error::Ok;
}

Error eigh_common(KernelContext& ctx, KernelArgs& a, const Tensor* in, bool lower, Tensor* vals, Tensor* vecs) {
  if (!dense::check_matrix(a, in, true)) return a.error();
  const int64_t m = in->sizes[in->rank - 1];
  if (!resize_to(a, vals, dense::batch_shape_with(*in, 2, m, 0, 1))) return a.error();
  if (vecs != nullptr && !resize_like(a, vecs, *in)) return a.error();
  if (in->dtype == ScalarType::Float32) return eigh_typed<float>(ctx, a, in, lower, vals, vecs);
  return eigh_typed<double>(ctx, a, in, lower, vals, vecs);
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
  double* work = sc.doubles(dense::syevd_work(m));
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
