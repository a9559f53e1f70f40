#include "delegates/vulkan/runtime/strided_view.h"

namespace ember {
namespace vulkan {

std::vector<int64_t> permuted_strides(const std::vector<int64_t>& strides, const std::vector<int64_t>& perm) {
  std::vector<int64_t> r(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) r[i] = strides[static_cast<size_t>(perm[i])];
  return r;
}

bool reshaped_strides(const Sizes& sizes, const std::vector<int64_t>& strides, const Sizes& new_sizes,
                      std::vector<int64_t>* new_strides) {
  if (numel(sizes) != numel(new_sizes) || strides.size() != sizes.size()) return false;
  new_strides->assign(new_sizes.size(), 1);
  if (numel(sizes) == 0) return true;
  // Walk both shapes in chunks of equal element count; each input chunk must be one
  // contiguous run (dim d's stride = dim d+1's stride * size), then the output dims of the
  // chunk take row-major strides ending at the chunk's innermost stride.
  size_t i = 0, o = 0;
  while (i < sizes.size() || o < new_sizes.size()) {
    // Size-1 dims on either side join no chunk.
    if (i < sizes.size() && sizes[i] == 1) {
      ++i;
      continue;
    }
    if (o < new_sizes.size() && new_sizes[o] == 1) {
      (*new_strides)[o++] = 1;
      continue;
    }
    if (i >= sizes.size() || o >= new_sizes.size()) return false;
    const size_t i0 = i, o0 = o;
    int64_t in_count = sizes[i++], out_count = new_sizes[o++];
    while (in_count != out_count) {
      if (in_count < out_count) {
        if (i >= sizes.size()) return false;
        in_count *= sizes[i++];
      } else {
        if (o >= new_sizes.size()) return false;
        out_count *= new_sizes[o++];
      }
    }
    // Input dims i0..i-1 (skipping size 1) must be contiguous with each other.
    int64_t inner = -1;
    for (size_t d = i; d-- > i0;) {
      if (sizes[d] == 1) continue;
      if (inner >= 0 && strides[d] != inner) return false;
      inner = strides[d] * sizes[d];
    }
    // The innermost non-1 input dim's stride, then row-major outward over the output dims.
    int64_t s = 1;
    for (size_t d = i; d-- > i0;)
      if (sizes[d] != 1) {
        s = strides[d];
        break;
      }
    for (size_t d = o; d-- > o0;) {
      (*new_strides)[d] = s;
      s *= new_sizes[d];
    }
  }
  return true;
}

}  // namespace vulkan
}  // namespace ember
