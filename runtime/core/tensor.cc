#include "runtime/core/tensor.h"

namespace ember {

bool Tensor::is_contiguous() const {
  if (dim_order == nullptr) return true;
  for (int i = 0; i < rank; ++i) {
    if (dim_order[i] != i) return false;
  }
  return true;
}

Error resize_tensor(Tensor& tensor, Span<const int64_t> new_sizes) {
  if (new_sizes.size() != tensor.rank) return Error::InvalidArgument;
  size_t numel = 1;
  bool same = true;
  for (size_t i = 0; i < new_sizes.size(); ++i) {
    if (new_sizes[i] < 0) return Error::InvalidArgument;
    if (new_sizes[i] != tensor.sizes[i]) same = false;
    numel *= static_cast<size_t>(new_sizes[i]);
  }
  if (same) return Error::Ok;
  if (!tensor.dynamic) return Error::OutOfBounds;
  // Capacity, not per-dimension bounds, is what keeps kernels inside their memory.
  if (numel * element_size(tensor.dtype) > tensor.capacity_bytes) return Error::OutOfBounds;
  for (size_t i = 0; i < new_sizes.size(); ++i) tensor.sizes[i] = new_sizes[i];
  return Error::Ok;
}

void contiguous_strides(const int64_t* sizes, int rank, int64_t* strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= sizes[i];
  }
}

}  // namespace ember
