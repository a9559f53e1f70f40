// Matrix products: linear, addmm, mm, bmm, baddbmm, matmul, mv, addmv, dot (float32), all
// through the shared GEMM (kernels/portable/linalg/gemm.h).
#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/util/broadcast.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

GemmMatrix row_major(const float* data, int64_t cols) { return GemmMatrix{data, cols, 1}; }
GemmMatrix transposed(const float* data, int64_t cols) { return GemmMatrix{data, 1, cols}; }

// Writes `self` broadcast to `shape` into out; false (error recorded) when it does not broadcast.
bool fill_broadcast(KernelArgs& a, const Tensor* self, const int64_t* shape, int rank, float* out) {
  int64_t strides[kMaxRank];
  if (!broadcast_strides(*self, shape, rank, strides)) {
    return a.fail("self does not broadcast to the output shape");
  }
  broadcast_copy(self->data_as<float>(), strides, shape, rank, out);
  return true;
}

// The operands of a product `beta * self + alpha * x @ y` (self optional): all float32 and
// contiguous.
bool require_float_operands(KernelArgs& a, const Tensor* self, const Tensor* x, const Tensor* y,
                            const Tensor* out) {
  if (!require_float(a, x) || !require_float(a, y) || !require_float(a, out)) return false;
  return self == nullptr || require_float(a, self);
}

// Starts `out` (`shape`) as beta * self when self is given and beta != 0 and sets the GEMM's
// beta accordingly (0 otherwise); false (error recorded) when self does not broadcast.
bool prefill_self(KernelArgs& a, const Tensor* self, double beta, const int64_t* shape, int rank, float* out,
                  float* gemm_beta) {
  *gemm_beta = 0.0f;
  if (self == nullptr || beta == 0.0) return true;
  if (!fill_broadcast(a, self, shape, rank, out)) return false;
  *gemm_beta = static_cast<float>(beta);
  return true;
}

// out = beta * self + alpha * x @ y for one product family (addmm, baddbmm, addmv).
using ProductImpl = Error (*)(KernelContext& ctx, KernelArgs& a, Tensor* self, Tensor* x, Tensor* y, double beta,
                              double alpha, Tensor* out);

// op(self, other) -> out: the plain product (mm, bmm, mv), beta 0 and alpha 1.
template <ProductImpl Impl>
Error product(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* x = a.tensor(0);
  Tensor* y = a.tensor(1);
  Tensor* out = a.tensor(2);
  if (!a.ok()) return a.error();
  return Impl(ctx, a, nullptr, x, y, 0.0, 1.0, out);
}

// addop(self, x, y, *, beta=1, alpha=1) -> out (addmm, baddbmm, addmv).
template <ProductImpl Impl>
Error add_product(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* self = a.tensor(0);
  Tensor* x = a.tensor(1);
  Tensor* y = a.tensor(2);
  double beta = a.scalar(3), alpha = a.scalar(4);
  Tensor* out = a.tensor(5);
  if (!a.ok()) return a.error();
  return Impl(ctx, a, self, x, y, beta, alpha, out);
}

// linear(input, weight, bias?) -> out: out = input @ weight^T + bias.
Error linear(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* w = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(3);
  if (!require_float(a, in) || !require_float(a, w) || !require_float(a, out)) return a.error();
  if (bias != nullptr && !require_float(a, bias)) return a.error();
  if (in->rank < 1 || w->rank != 2) return ctx.fail(Error::InvalidArgument, "expected weight [out, in]");
  const int64_t k = in->sizes[in->rank - 1];
  if (w->sizes[1] != k) return ctx.fail(Error::InvalidArgument, "input features do not match weight");
  const int64_t nout = w->sizes[0];
  int64_t sizes[kMaxRank];
  for (int d = 0; d < in->rank - 1; ++d) sizes[d] = in->sizes[d];
  sizes[in->rank - 1] = nout;
  if (!resize_out(a, out, sizes, in->rank)) return a.error();
  const int64_t m = k == 0 ? in->numel() : in->numel() / k;
  float* c = out->data_as<float>();
  float beta = 0.0f;
  if (bias != nullptr) {
    const int64_t shape[2] = {m, nout};
    if (!fill_broadcast(a, bias, shape, 2, c)) return a.error();
    beta = 1.0f;
  }
  GemmProblem p;
  p.m = m;
  p.n = nout;
  p.k = k;
  p.a = row_major(in->data_as<float>(), k);
  p.b = transposed(w->data_as<float>(), k);
  p.c = c;
  p.ldc = nout;
  p.beta = beta;
  gemm(ctx, p);
  return Error::Ok;
}

// Shared by addmm/mm: out[m, n] = beta * self + alpha * mat1 @ mat2.
Error addmm_impl(KernelContext& ctx, KernelArgs& a, Tensor* self, Tensor* m1, Tensor* m2, double beta,
                 double alpha, Tensor* out) {
  if (!require_float_operands(a, self, m1, m2, out)) return a.error();
  if (m1->rank != 2 || m2->rank != 2) return ctx.fail(Error::InvalidArgument, "expected 2-D matrices");
  if (m1->sizes[1] != m2->sizes[0]) return ctx.fail(Error::InvalidArgument, "inner dimensions differ");
  const int64_t m = m1->sizes[0], k = m1->sizes[1], nn = m2->sizes[1];
  const int64_t shape[2] = {m, nn};
  if (!resize_out(a, out, shape, 2)) return a.error();
  float* c = out->data_as<float>();
  float b = 0.0f;
  if (!prefill_self(a, self, beta, shape, 2, c, &b)) return a.error();
  GemmProblem p;
  p.m = m;
  p.n = nn;
  p.k = k;
  p.a = row_major(m1->data_as<float>(), k);
  p.b = row_major(m2->data_as<float>(), nn);
  p.c = c;
  p.ldc = nn;
  p.alpha = static_cast<float>(alpha);
  p.beta = b;
  gemm(ctx, p);
  return Error::Ok;
}

// Shared by bmm/baddbmm: out[b] = beta * self[b] + alpha * x[b] @ y[b].
Error baddbmm_impl(KernelContext& ctx, KernelArgs& a, Tensor* self, Tensor* x, Tensor* y, double beta,
                   double alpha, Tensor* out) {
  if (!require_float_operands(a, self, x, y, out)) return a.error();
  if (x->rank != 3 || y->rank != 3) return ctx.fail(Error::InvalidArgument, "expected 3-D tensors");
  const int64_t batch = x->sizes[0], m = x->sizes[1], k = x->sizes[2], nn = y->sizes[2];
  if (y->sizes[0] != batch || y->sizes[1] != k) {
    return ctx.fail(Error::InvalidArgument, "batch or inner dimensions differ");
  }
  const int64_t shape[3] = {batch, m, nn};
  if (!resize_out(a, out, shape, 3)) return a.error();
  float* c = out->data_as<float>();
  float b = 0.0f;
  if (!prefill_self(a, self, beta, shape, 3, c, &b)) return a.error();
  GemmWorkspace ws = reserve_gemm_workspace(ctx, m, nn, k);
  for (int64_t i = 0; i < batch; ++i) {
    GemmProblem p;
    p.m = m;
    p.n = nn;
    p.k = k;
    p.a = row_major(x->data_as<float>() + i * m * k, k);
    p.b = row_major(y->data_as<float>() + i * k * nn, nn);
    p.c = c + i * m * nn;
    p.ldc = nn;
    p.alpha = static_cast<float>(alpha);
    p.beta = b;
    gemm(&ctx, ws, p);
  }
  return Error::Ok;
}

// matmul(self, other) -> out, with NumPy semantics: 1-D operands gain (and lose) a dimension,
// batch dimensions broadcast.
Error matmul(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* x = a.tensor(0);
  Tensor* y = a.tensor(1);
  Tensor* out = a.tensor(2);
  if (!require_float(a, x) || !require_float(a, y) || !require_float(a, out)) return a.error();
  if (x->rank < 1 || y->rank < 1) return ctx.fail(Error::InvalidArgument, "matmul needs tensors of rank >= 1");
  const bool x_vec = x->rank == 1, y_vec = y->rank == 1;
  const int64_t m = x_vec ? 1 : x->sizes[x->rank - 2];
  const int64_t k = x->sizes[x->rank - 1];
  const int64_t ky = y_vec ? y->sizes[0] : y->sizes[y->rank - 2];
  const int64_t nn = y_vec ? 1 : y->sizes[y->rank - 1];
  if (k != ky) return ctx.fail(Error::InvalidArgument, "inner dimensions differ");
  // Batch shapes, right-aligned and broadcast.
  const int xb = x_vec ? 0 : x->rank - 2, yb = y_vec ? 0 : y->rank - 2;
  const int batch_rank = xb > yb ? xb : yb;
  int64_t batch[kMaxRank], xs[kMaxRank], ys[kMaxRank];
  int64_t x_stride = m * k, y_stride = k * nn;
  for (int d = batch_rank - 1; d >= 0; --d) {
    int dx = d - (batch_rank - xb), dy = d - (batch_rank - yb);
    int64_t sx = dx >= 0 ? x->sizes[dx] : 1, sy = dy >= 0 ? y->sizes[dy] : 1;
    if (sx != sy && sx != 1 && sy != 1) return ctx.fail(Error::InvalidArgument, "batch dimensions do not broadcast");
    batch[d] = sx > sy ? sx : sy;
    if (sx == 0 || sy == 0) batch[d] = 0;
    xs[d] = sx == 1 ? 0 : x_stride;
    ys[d] = sy == 1 ? 0 : y_stride;
    x_stride *= sx;
    y_stride *= sy;
  }
  int64_t sizes[kMaxRank];
  int rank = 0;
  for (int d = 0; d < batch_rank; ++d) sizes[rank++] = batch[d];
  if (!x_vec) sizes[rank++] = m;
  if (!y_vec) sizes[rank++] = nn;
  if (!resize_out(a, out, sizes, rank)) return a.error();
  int64_t nbatch = 1;
  for (int d = 0; d < batch_rank; ++d) nbatch *= batch[d];
  const float* xd = x->data_as<float>();
  const float* yd = y->data_as<float>();
  float* c = out->data_as<float>();
  // A 2-D (or 1-D) right operand: fold x's batch into rows, one GEMM.
  if (batch_rank == 0 || (yb == 0 && nbatch > 0)) {
    GemmProblem p;
    p.m = m * nbatch;
    p.n = nn;
    p.k = k;
    p.a = row_major(xd, k);
    p.b = row_major(yd, nn);
    p.c = c;
    p.ldc = nn;
    gemm(ctx, p);
    return Error::Ok;
  }
  GemmWorkspace ws = reserve_gemm_workspace(ctx, m, nn, k);
  int64_t index[kMaxRank] = {0};
  for (int64_t b = 0; b < nbatch; ++b) {
    int64_t xo = 0, yo = 0;
    for (int d = 0; d < batch_rank; ++d) {
      xo += index[d] * xs[d];
      yo += index[d] * ys[d];
    }
    GemmProblem p;
    p.m = m;
    p.n = nn;
    p.k = k;
    p.a = row_major(xd + xo, k);
    p.b = row_major(yd + yo, nn);
    p.c = c + b * m * nn;
    p.ldc = nn;
    gemm(&ctx, ws, p);
    for (int d = batch_rank - 1; d >= 0; --d) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return Error::Ok;
}

// Shared by mv/addmv: out[m] = beta * self + alpha * mat @ vec.
Error addmv_impl(KernelContext& ctx, KernelArgs& a, Tensor* self, Tensor* mat, Tensor* vec, double beta,
                 double alpha, Tensor* out) {
  if (!require_float_operands(a, self, mat, vec, out)) return a.error();
  if (mat->rank != 2 || vec->rank != 1 || mat->sizes[1] != vec->sizes[0]) {
    return ctx.fail(Error::InvalidArgument, "expected mat [m, k] and vec [k]");
  }
  const int64_t m = mat->sizes[0], k = mat->sizes[1];
  const int64_t shape[1] = {m};
  if (!resize_out(a, out, shape, 1)) return a.error();
  float* c = out->data_as<float>();
  float b = 0.0f;
  if (!prefill_self(a, self, beta, shape, 1, c, &b)) return a.error();
  // As a 1 x m row: out^T = vec^T @ mat^T (dot products over mat's contiguous rows).
  GemmProblem p;
  p.m = 1;
  p.n = m;
  p.k = k;
  p.a = row_major(vec->data_as<float>(), k);
  p.b = transposed(mat->data_as<float>(), k);
  p.c = c;
  p.ldc = m;
  p.alpha = static_cast<float>(alpha);
  p.beta = b;
  gemm(ctx, p);
  return Error::Ok;
}

// dot(self, tensor) -> out (0-D)
Error dot(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* x = a.tensor(0);
  Tensor* y = a.tensor(1);
  Tensor* out = a.tensor(2);
  if (!require_float(a, x) || !require_float(a, y) || !require_float(a, out)) return a.error();
  if (x->rank != 1 || y->rank != 1 || x->sizes[0] != y->sizes[0]) {
    return ctx.fail(Error::InvalidArgument, "expected two 1-D tensors of the same size");
  }
  if (!resize_out(a, out, nullptr, 0)) return a.error();
  double s = 0.0;
  const float* xd = x->data_as<float>();
  const float* yd = y->data_as<float>();
  for (int64_t i = 0; i < x->sizes[0]; ++i) s += static_cast<double>(xd[i]) * yd[i];
  out->data_as<float>()[0] = static_cast<float>(s);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::linear.default", linear);
EMBER_REGISTER_KERNEL("aten::addmm.default", add_product<addmm_impl>);
EMBER_REGISTER_KERNEL("aten::mm.default", product<addmm_impl>);
EMBER_REGISTER_KERNEL("aten::bmm.default", product<baddbmm_impl>);
EMBER_REGISTER_KERNEL("aten::baddbmm.default", add_product<baddbmm_impl>);
EMBER_REGISTER_KERNEL("aten::matmul.default", matmul);
EMBER_REGISTER_KERNEL("aten::mv.default", product<addmv_impl>);
EMBER_REGISTER_KERNEL("aten::addmv.default", add_product<addmv_impl>);
EMBER_REGISTER_KERNEL("aten::dot.default", dot);

}  // namespace portable
}  // namespace ember
