// p-norm distances between rows:
//   aten::cdist.default / aten::_cdist_forward.default(x1, x2, float p, int? compute_mode) -> out
//     x1 [*, P, M], x2 [*, R, M] (batch dims broadcast) -> out [*, P, R],
//     out[b, i, j] = ||x1[b, i] - x2[b, j]||_p.
//   aten::pdist.default / aten::_pdist_forward.default(self, float p) -> out
//     self [N, M] -> out [N*(N-1)/2], the distances of rows i < j in row-major order.
// p >= 0: p = 0 counts the differing coordinates, p = inf takes the largest |difference|.
// float32 and float64 (as ATen's CPU kernels), computed in the tensor's own precision.
// For p = 2, cdist computes as ATen does where ATen switches to matrix products
// (compute_mode 1 "use_mm_for_euclid_dist", or 0/None "if_necessary" with P > 25 or R > 25):
// sqrt(max(|x|^2 + |y|^2 - 2 x.y, 0)); elsewhere the direct sum of squared differences.
#include <cmath>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// ||a - b||_p over m coordinates.
template <typename C>
C p_distance(const C* a, const C* b, int64_t m, double p) {
  C acc = 0;
  if (p == 0.0) {
    for (int64_t k = 0; k < m; ++k) acc += a[k] != b[k] ? C(1) : C(0);
    return acc;
  }
  if (p == 1.0) {
    for (int64_t k = 0; k < m; ++k) acc += std::abs(a[k] - b[k]);
    return acc;
  }
  if (p == 2.0) {
    for (int64_t k = 0; k < m; ++k) acc += (a[k] - b[k]) * (a[k] - b[k]);
    return std::sqrt(acc);
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < m; ++k) {
      C d = std::abs(a[k] - b[k]);
      if (d > acc || d != d) acc = d;
    }
    return acc;
  }
  const C pc = static_cast<C>(p);
  for (int64_t k = 0; k < m; ++k) acc += std::pow(std::abs(a[k] - b[k]), pc);
  return std::pow(acc, C(1) / pc);
}

// ATen's matrix-product form of the Euclidean distance.
template <typename C>
C mm_euclidean(const C* a, const C* b, int64_t m) {
  C dot = 0, na = 0, nb = 0;
  for (int64_t k = 0; k < m; ++k) {
    dot += (C(-2) * a[k]) * b[k];
    na += a[k] * a[k];
    nb += b[k] * b[k];
  }
  C r = dot + na + nb;
  return std::sqrt(r > 0 ? r : C(0));
}

bool check_p(KernelArgs& a, double p) {
  if (!(p >= 0)) return a.fail("p must be a non-negative number (or inf)");
  return true;
}

bool check_dtype(KernelArgs& a, const Tensor* t) {
  if (t->dtype != ScalarType::Float32 && t->dtype != ScalarType::Float64) {
    return a.fail("only float32 and float64 inputs are supported");
  }
  return require_contiguous(a, t);
}

template <typename C>
void cdist_typed(const Tensor& x1, const Tensor& x2, const Shape& batch, double p, bool use_mm, Tensor& out) {
  const int r1 = x1.rank, r2 = x2.rank, rb = batch.rank;
  const int64_t rows1 = x1.sizes[r1 - 2], rows2 = x2.sizes[r2 - 2], m = x1.sizes[r1 - 1];
  // Element strides of one matrix per batch dim of each input (0 where broadcast).
  int64_t s1[kMaxRank], s2[kMaxRank];
  int64_t st1 = rows1 * m, st2 = rows2 * m;
  for (int d = rb - 1; d >= 0; --d) {
    int d1 = d - (rb - (r1 - 2)), d2 = d - (rb - (r2 - 2));
    int64_t n1 = d1 >= 0 ? x1.sizes[d1] : 1, n2 = d2 >= 0 ? x2.sizes[d2] : 1;
    s1[d] = n1 == 1 ? 0 : st1;
    s2[d] = n2 == 1 ? 0 : st2;
    st1 *= n1;
    st2 *= n2;
  }
  const C* a = x1.data_as<C>();
  const C* b = x2.data_as<C>();
  C* o = out.data_as<C>();
  int64_t index[kMaxRank] = {0};
  const int64_t batches = batch.numel();
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t off1 = 0, off2 = 0;
    for (int d = 0; d < rb; ++d) {
      off1 += index[d] * s1[d];
      off2 += index[d] * s2[d];
    }
    for (int64_t i = 0; i < rows1; ++i) {
      for (int64_t j = 0; j < rows2; ++j) {
        const C* u = a + off1 + i * m;
        const C* v = b + off2 + j * m;
        *o++ = use_mm ? mm_euclidean(u, v, m) : p_distance(u, v, m, p);
      }
    }
    for (int d = rb - 1; d >= 0; --d) {
      if (++index[d] < batch.d[d]) break;
      index[d] = 0;
    }
  }
}

// (x1, x2, p, compute_mode, out)
Error cdist(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* x1 = a.tensor(0);
  const Tensor* x2 = a.tensor(1);
  const double p = a.scalar(2);
  const int64_t mode = a.optional_int(3, 0);
  Tensor* out = a.out(4);
  if (!a.ok() || !check_p(a, p) || !check_dtype(a, x1) || !check_dtype(a, x2)) return a.error();
  if (x1->rank < 2 || x2->rank < 2) return a.fail("x1 and x2 must have at least 2 dimensions"), a.error();
  if (x1->dtype != x2->dtype) return a.fail("x1 and x2 must have the same dtype"), a.error();
  if (out->dtype != x1->dtype) return a.fail("output dtype must equal the input dtype"), a.error();
  if (x1->sizes[x1->rank - 1] != x2->sizes[x2->rank - 1]) {
    return a.fail("x1 and x2 must have the same number of columns"), a.error();
  }
  if (mode < 0 || mode > 2) return a.fail("compute_mode must be None, 0, 1 or 2"), a.error();
  Shape b1, b2, batch;
  for (int d = 0; d < x1->rank - 2; ++d) b1.push(x1->sizes[d]);
  for (int d = 0; d < x2->rank - 2; ++d) b2.push(x2->sizes[d]);
  if (!broadcast_shapes(b1, b2, batch)) return a.fail("batch dimensions of x1 and x2 do not broadcast"), a.error();
  Shape shape = batch;
  const int64_t rows1 = x1->sizes[x1->rank - 2], rows2 = x2->sizes[x2->rank - 2];
  if (!shape.push(rows1) || !shape.push(rows2)) return a.fail("output rank too large"), a.error();
  if (!resize_to(a, out, shape)) return a.error();
  const bool use_mm = p == 2.0 && (mode == 1 || (mode == 0 && (rows1 > 25 || rows2 > 25)));
  if (x1->dtype == ScalarType::Float64) {
    cdist_typed<double>(*x1, *x2, batch, p, use_mm, *out);
  } else {
    cdist_typed<float>(*x1, *x2, batch, p, use_mm, *out);
  }
  return Error::Ok;
}

template <typename C>
void pdist_typed(const Tensor& x, double p, Tensor& out) {
  const int64_t rows = x.sizes[0], m = x.sizes[1];
  const C* d = x.data_as<C>();
  C* o = out.data_as<C>();
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = i + 1; j < rows; ++j) *o++ = p_distance(d + i * m, d + j * m, m, p);
  }
}

// (self, p, out)
Error pdist(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  const double p = a.scalar(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !check_p(a, p) || !check_dtype(a, x)) return a.error();
  if (x->rank != 2) return a.fail("pdist expects a 2-D input"), a.error();
  if (out->dtype != x->dtype) return a.fail("output dtype must equal the input dtype"), a.error();
  const int64_t rows = x->sizes[0];
  Shape shape;
  shape.push(rows * (rows - 1) / 2);
  if (!resize_to(a, out, shape)) return a.error();
  if (x->dtype == ScalarType::Float64) {
    pdist_typed<double>(*x, p, *out);
  } else {
    pdist_typed<float>(*x, p, *out);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::cdist.default", cdist);
EMBER_REGISTER_KERNEL("aten::_cdist_forward.default", cdist);
EMBER_REGISTER_KERNEL("aten::pdist.default", pdist);
EMBER_REGISTER_KERNEL("aten::_pdist_forward.default", pdist);

}  // namespace portable
}  // namespace ember
