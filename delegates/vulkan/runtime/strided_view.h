// A tensor seen through the permutes, slices and reshapes between it and a reader that indexes
// with strides (sdpa.comp): the Vulkan lowering folds such layout nodes into their reader instead
// of copying (dispatch_fusion.h, lazy_layout). Pure functions of sizes and strides, in elements.
#pragma once

#include <cstdint>
#include <vector>

#include "delegates/vulkan/vulkan_shapes.h"

namespace ember {
namespace vulkan {

struct StridedView {
  int tensor = -1;       // the tensor whose buffer holds the elements (a real, written tensor)
  int64_t offset = 0;    // of element (0, ..., 0)
  std::vector<int64_t> strides;  // per dim of the view's sizes
};

// The view of `sizes` after permute `perm` (output dim i is input dim perm[i]; perm already
// normalised and valid).
std::vector<int64_t> permuted_strides(const std::vector<int64_t>& strides, const std::vector<int64_t>& perm);

// Strides for reading `sizes` (a view with `strides`) as `new_sizes` (same element count, same
// row-major element order), when that is possible without a copy: a run of input dims that
// are contiguous with each other may be split or merged. False when it is not (the reader then
// needs a copy). Size-1 dims take any stride.
bool reshaped_strides(const Sizes& sizes, const std::vector<int64_t>& strides, const Sizes& new_sizes,
                      std::vector<int64_t>* new_strides);

}  // namespace vulkan
}  // namespace ember
