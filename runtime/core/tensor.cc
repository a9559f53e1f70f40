#include "runtime/core/tensor.h"

#include <cstdint>

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
  bool overflow = false;  // sizes from a malformed program may multiply past SIZE_MAX
  for (size_t i = 0; i < new_sizes.size(); ++i) {
    if (new_sizes[i] < 0) return Error::InvalidArgument;
    if (new_sizes[i] != tensor.sizes[i]) same = false;
    size_t s = static_cast<size_t>(new_sizes[i]);
    if (s != 0 && numel > SIZE_MAX / s) overflow = true;
    numel *= s;
  }
  // Capacity, not per-dimension bounds, is what keeps kernels inside their memory. Checked
  // for unchanged sizes too: a tensor without memory (an output whose buffer the caller has
  // not set, or one a malformed program never planned) must not be written.
  if (numel != 0 && (overflow || numel > tensor.capacity_bytes / element_size(tensor.dtype))) {
    return Error::OutOfBounds;
  }
  if (same) return Error::Ok;
  if (!tensor.dynamic) return Error::OutOfBounds;
  for (size_t i = 0; i < new_sizes.size(); ++i) tensor.sizes[i] = new_sizes[i];
  return Error::Ok;
}

void contiguous_strides(const int64_t* sizes, int rank, int64_t* strides) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    strides[i] = s;
    if (i > 0) s *= sizes[i];  // the outermost size never enters a stride
  }
}

}  // namespace ember
