// aten::embedding.default(weight, indices, padding_idx, scale_grad_by_freq, sparse) -> out
// out[..., :] = weight[indices[...], :]; weight of any dtype (rows are copied), indices int64
// or int32. An index outside [0, num_embeddings) fails with OutOfBounds. padding_idx,
// scale_grad_by_freq and sparse only affect gradients.
#include <cstring>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

template <typename Index>
bool gather_rows(const Index* idx, int64_t count, const uint8_t* w, int64_t rows, size_t row_bytes, uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t r = static_cast<int64_t>(idx[i]);
    if (r < 0 || r >= rows) return false;
    std::memcpy(out + i * row_bytes, w + r * row_bytes, row_bytes);
  }
  return true;
}

Error embedding(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* weight = a.tensor(0);
  Tensor* indices = a.tensor(1);
  Tensor* out = a.tensor(5);
  if (!a.ok()) return a.error();
  if (weight->rank != 2) return ctx.fail(Error::InvalidArgument, "weight must be 2-D");
  if (!weight->is_contiguous() || !indices->is_contiguous() || !out->is_contiguous()) {
    return ctx.fail(Error::NotSupported, "non-contiguous tensors are not supported");
  }
  if (out->dtype != weight->dtype) return ctx.fail(Error::InvalidArgument, "output dtype differs from weight");
  if (indices->dtype != ScalarType::Int64 && indices->dtype != ScalarType::Int32) {
    return ctx.fail(Error::InvalidArgument, "indices must be int64 or int32");
  }
  if (indices->rank + 1 > kMaxRank) return ctx.fail(Error::InvalidArgument, "indices rank too large");
  int64_t sizes[kMaxRank];
  for (int d = 0; d < indices->rank; ++d) sizes[d] = indices->sizes[d];
  sizes[indices->rank] = weight->sizes[1];
  if (!resize_out(a, out, sizes, indices->rank + 1)) return a.error();
  const size_t row_bytes = static_cast<size_t>(weight->sizes[1]) * element_size(weight->dtype);
  const uint8_t* w = static_cast<const uint8_t*>(weight->data);
  uint8_t* o = static_cast<uint8_t*>(out->data);
  const bool ok = indices->dtype == ScalarType::Int64
                      ? gather_rows(indices->data_as<int64_t>(), indices->numel(), w, weight->sizes[0], row_bytes, o)
                      : gather_rows(indices->data_as<int32_t>(), indices->numel(), w, weight->sizes[0], row_bytes, o);
  if (!ok) return ctx.fail(Error::OutOfBounds, "index out of range of the embedding table");
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::embedding.default", embedding);

}  // namespace portable
}  // namespace ember
