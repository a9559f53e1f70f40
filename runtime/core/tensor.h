// Tensor: a view of typed, contiguous (or dim-ordered) memory that the runtime does not own.
//
// Ownership and lifetimes: `sizes`, `max_sizes` and `dim_order` live in the method allocator
// (or caller memory in tests) and outlive the Tensor's use; `data` points into a planned
// arena, a constant segment of the loaded program, or caller memory bound by set_input().
// Layout: element (i0, ..., in) of a contiguous tensor is at linear index
// sum(ik * stride_k) with stride_k = prod(sizes[k+1..]); `dim_order`, when set, lists
// dimensions from outermost to innermost in memory (nullptr means 0, 1, ..., rank-1).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace ember {

constexpr int kMaxRank = 16;

struct Tensor {
  ScalarType dtype = ScalarType::Float32;
  uint8_t rank = 0;
  bool dynamic = false;          // sizes may change per call, within max_sizes
  int64_t* sizes = nullptr;      // current sizes, [rank]
  const int64_t* max_sizes = nullptr;  // upper bounds, [rank]; equal to sizes when static
  const uint8_t* dim_order = nullptr;  // nullptr means contiguous
  void* data = nullptr;
  size_t capacity_bytes = 0;     // bytes usable at `data`

  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= sizes[i];
    return n;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype); }
  // Its current sizes fit the memory behind it: within the capacity, with storage unless
  // empty (an unplanned tensor has none). Kernels must only be handed tensors that do.
  bool fits_storage() const {
    const size_t bytes = nbytes();
    return bytes <= capacity_bytes && (bytes == 0 || data != nullptr);
  }
  int64_t size(int dim) const { return sizes[dim]; }
  bool is_contiguous() const;

  template <typename T>
  T* data_as() const { return static_cast<T*>(data); }
};

// Sets `tensor`'s sizes. Fails with InvalidArgument on a rank change and OutOfBounds when
// the new element count does not fit the capacity or a static tensor would change shape.
Error resize_tensor(Tensor& tensor, Span<const int64_t> new_sizes);

// Row-major strides of `sizes` into `strides` (both [rank]).
void contiguous_strides(const int64_t* sizes, int rank, int64_t* strides);

}  // namespace ember
