// Coordinates of the nonzero elements: nonzero / argwhere ([count, rank]), nonzero_static
// ([size, rank], padded), nonzero_numpy (one [count] tensor per dim). The count is data
// dependent: outputs are resized within their planned bounds.
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// nonzero(self, out) / argwhere(self, out): [count, rank] int64 coordinates.
Error nonzero(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* self = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok() || !require_contiguous(a, self)) return a.error();
  int64_t total = self->numel(), count = 0;
  for (int64_t i = 0; i < total; ++i) count += load_as<bool>(self->data, self->dtype, i) ? 1 : 0;
  Shape s;
  s.push(count);
  s.push(self->rank);
  if (!resize_to(a, out, s)) return a.error();
  Counter c(self->rank, self->sizes);
  int64_t row = 0;
  for (int64_t i = 0; i < total; ++i, c.next()) {
    if (!load_as<bool>(self->data, self->dtype, i)) continue;
    for (int d = 0; d < self->rank; ++d) store_as<int64_t>(out->data, out->dtype, row * self->rank + d, c.idx[d]);
    ++row;
  }
  return Error::Ok;
}

// nonzero_static(self, *, size, fill_value, out): [size, rank], padded with fill_value.
Error nonzero_static(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  int64_t size = a.int_value(1), fill = a.int_value(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, self)) return a.error();
  if (size < 0) return a.fail("size must be non-negative"), a.error();
  Shape s;
  s.push(size);
  s.push(self->rank);
  if (!resize_to(a, out, s)) return a.error();
  for (int64_t i = 0; i < size * self->rank; ++i) store_as<int64_t>(out->data, out->dtype, i, fill);
  Counter c(self->rank, self->sizes);
  int64_t row = 0, total = self->numel();
  for (int64_t i = 0; i < total && row < size; ++i, c.next()) {
    if (!load_as<bool>(self->data, self->dtype, i)) continue;
    for (int d = 0; d < self->rank; ++d) store_as<int64_t>(out->data, out->dtype, row * self->rank + d, c.idx[d]);
    ++row;
  }
  return Error::Ok;
}

// nonzero_numpy(self) -> Tensor[]: the indices of the nonzero elements, one [count] int64
// tensor per dim (a 0-d self counts as 1-D); the outputs follow self.
Error nonzero_numpy(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n < 2) return a.fail("wrong number of arguments"), a.error();
  const Tensor* self = a.tensor(0);
  if (!a.ok() || !require_contiguous(a, self)) return a.error();
  const int dims = self->rank == 0 ? 1 : self->rank;
  if (n - 1 != static_cast<size_t>(dims)) return a.fail("expected one output per dim of self"), a.error();
  const int64_t total = self->numel();
  int64_t count = 0;
  for (int64_t i = 0; i < total; ++i) count += load_as<bool>(self->data, self->dtype, i) ? 1 : 0;
  Shape s;
  s.push(count);
  for (int d = 0; d < dims; ++d) {
    Tensor* out = a.out(1 + static_cast<size_t>(d));
    if (!a.ok() || !resize_to(a, out, s)) return a.error();
  }
  if (self->rank == 0) {
    if (count == 1) store_as<int64_t>(a.out(1)->data, a.out(1)->dtype, 0, 0);
    return Error::Ok;
  }
  Counter c(self->rank, self->sizes);
  int64_t row = 0;
  for (int64_t i = 0; i < total; ++i, c.next()) {
    if (!load_as<bool>(self->data, self->dtype, i)) continue;
    for (int d = 0; d < self->rank; ++d) {
      Tensor* out = args[1 + d]->as_tensor;
      store_as<int64_t>(out->data, out->dtype, row, c.idx[d]);
    }
    ++row;
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::nonzero.default", nonzero);
EMBER_REGISTER_KERNEL("aten::argwhere.default", nonzero);
EMBER_REGISTER_KERNEL("aten::nonzero_static.default", nonzero_static);
EMBER_REGISTER_KERNEL("aten::nonzero_numpy.default", nonzero_numpy);

}  // namespace portable
}  // namespace ember
