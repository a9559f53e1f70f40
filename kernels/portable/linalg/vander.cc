// linalg_vander(x, *, N=None): out[..., i, j] = x[..., i]^j for j < N (N defaults to
// x.size(-1)); a 0-d x is one element. Integers multiply exactly in int64; floats in double,
// rounded once.
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

Error linalg_vander(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, x)) return a.error();
  if (x->dtype == ScalarType::Bool) return a.fail("x must be a numeric tensor"), a.error();
  const int64_t len = x->rank == 0 ? 1 : x->sizes[x->rank - 1];
  const int64_t cols = a.optional_int(1, len);
  if (!a.ok()) return a.error();
  if (cols < 0) return a.fail("N must be non-negative"), a.error();
  if (x->rank + 1 > kMaxRank) return a.fail("x has too many dims"), a.error();
  Shape s;
  for (int i = 0; i + 1 < x->rank; ++i) s.push(x->sizes[i]);
  s.push(len);
  s.push(cols);
  if (out->dtype != x->dtype) return a.fail("out must have x's dtype"), a.error();
  if (!resize_to(a, out, s)) return a.error();
  const int64_t count = x->rank == 0 ? 1 : x->numel();
  const bool integral = !is_floating(x->dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (integral) {
      const int64_t v = load_as<int64_t>(x->data, x->dtype, i);
      uint64_t p = 1;  // wraps like PyTorch's integer cumprod
      for (int64_t j = 0; j < cols; ++j) {
        store_as<int64_t>(out->data, out->dtype, i * cols + j, static_cast<int64_t>(p));
        p *= static_cast<uint64_t>(v);
      }
    } else {
      const double v = load_as<double>(x->data, x->dtype, i);
      double p = 1.0;
      for (int64_t j = 0; j < cols; ++j) {
        store_as<double>(out->data, out->dtype, i * cols + j, p);
        p *= v;
      }
    }
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::linalg_vander.default", linalg_vander);

}  // namespace portable
}  // namespace ember
