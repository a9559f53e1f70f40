// aten::gradient.scalarint(self, *, Scalar? spacing=None, int? dim=None, int edge_order=1)
//   -> Tensor[] (one output per differentiated dimension: all dims in order, or just `dim`).
// Uniform spacing h (default 1), along dimension d of size n >= edge_order + 1:
//   interior   ((x[i+1] - x[i-1]) / h) / 2
//   edge_order 1: (x[1] - x[0]) / h and (x[n-1] - x[n-2]) / h
//   edge_order 2: (-1.5 x[0] + 2 x[1] - 0.5 x[2]) / h and (0.5 x[n-3] - 2 x[n-2] + 1.5 x[n-1]) / h
// as ATen computes it. Outputs are floating (integer inputs give the outputs' float dtype).
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Differentiates `in` along `dim` (outer x n x inner layout) into `out`.
template <typename C>
void gradient_along(const Tensor& in, int dim, C h, int64_t edge_order, Tensor& out) {
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= in.sizes[d];
  for (int d = dim + 1; d < in.rank; ++d) inner *= in.sizes[d];
  const int64_t n = in.sizes[dim];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < inner; ++k) {
      const int64_t base = o * n * inner + k;
      auto x = [&](int64_t i) { return load_as<C>(in.data, in.dtype, base + i * inner); };
      auto put = [&](int64_t i, C v) { store_as<C>(out.data, out.dtype, base + i * inner, v); };
      for (int64_t i = 1; i + 1 < n; ++i) put(i, ((x(i + 1) - x(i - 1)) / h) / C(2));
      if (edge_order == 1) {
        put(0, (x(1) - x(0)) / h);
        put(n - 1, (x(n - 1) - x(n - 2)) / h);
      } else {
        put(0, (C(-1.5) * x(0) + C(2) * x(1) - C(0.5) * x(2)) / h);
        put(n - 1, (C(0.5) * x(n - 3) - C(2) * x(n - 2) + C(1.5) * x(n - 1)) / h);
      }
    }
  }
}

// (self, spacing, dim, edge_order, out...)
Error gradient_scalarint(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 5) return a.fail("wrong number of arguments"), a.error();
  const Tensor* self = a.tensor(0);
  double spacing = 1.0;
  a.optional_scalar(1, &spacing);
  const bool all_dims = a.is_none(2);
  const int64_t dim_arg = a.optional_int(2, 0);
  const int64_t edge_order = a.int_value(3);
  if (!a.ok() || !require_contiguous(a, self)) return a.error();
  if (self->rank == 0) return a.fail("gradient needs a tensor with at least one dimension"), a.error();
  if (edge_order != 1 && edge_order != 2) return a.fail("edge_order must be 1 or 2"), a.error();
  if (spacing == 0) return a.fail("spacing must be nonzero"), a.error();
  const int64_t dim = wrap_dim(dim_arg, self->rank);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  const size_t outputs = all_dims ? self->rank : 1;
  if (n != 4 + outputs) return a.fail("expected one output per differentiated dimension"), a.error();
  for (size_t k = 0; k < outputs; ++k) {
    const int d = all_dims ? static_cast<int>(k) : static_cast<int>(dim);
    if (self->sizes[d] < edge_order + 1) {
      return a.fail("each differentiated dimension must have at least edge_order + 1 elements"), a.error();
    }
    Tensor* out = a.out(4 + k);
    if (!a.ok()) return a.error();
    if (!is_floating(out->dtype) || (is_floating(self->dtype) && out->dtype != self->dtype)) {
      return a.fail("output dtype must be the (floating) input dtype"), a.error();
    }
    if (!resize_like(a, out, *self)) return a.error();
    EMBER_DISPATCH_COMPUTE(out->dtype, C, gradient_along<C>(*self, d, static_cast<C>(spacing), edge_order, *out));
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::gradient.scalarint", gradient_scalarint);

}  // namespace portable
}  // namespace ember
