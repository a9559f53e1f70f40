// Reading one float tensor broadcast to a larger shape: per-dimension element strides (0 on
// broadcast dimensions) and a contiguous copy through them.
#pragma once

#include <cstdint>

#include "runtime/core/tensor.h"

namespace ember {
namespace portable {

// Element strides for reading `src` broadcast to `shape` (rank dims, src rank <= rank):
// 0 for broadcast dimensions. False when `src` does not broadcast to `shape`.
inline bool broadcast_strides(const Tensor& src, const int64_t* shape, int rank, int64_t* strides) {
  if (src.rank > rank) return false;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    int sd = d - (rank - src.rank);
    if (sd < 0) {
      strides[d] = 0;
      continue;
    }
    int64_t size = src.sizes[sd];
    if (size == shape[d]) {
      strides[d] = shape[d] == 1 ? 0 : stride;
    } else if (size == 1) {
      strides[d] = 0;
    } else {
      return false;
    }
    stride *= size;
  }
  return true;
}

// dst (contiguous, `shape`) = src broadcast to `shape`; src validated by broadcast_strides.
inline void broadcast_copy(const float* src, const int64_t* strides, const int64_t* shape, int rank,
                           float* dst) {
  int64_t index[kMaxRank] = {0};
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) total *= shape[d];
  if (total == 0) return;
  const int64_t inner = rank > 0 ? shape[rank - 1] : 1;
  const int64_t inner_stride = rank > 0 ? strides[rank - 1] : 0;
  for (int64_t done = 0; done < total; done += inner) {
    int64_t offset = 0;
    for (int d = 0; d < rank - 1; ++d) offset += index[d] * strides[d];
    for (int64_t j = 0; j < inner; ++j) dst[done + j] = src[offset + j * inner_stride];
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace portable
}  // namespace ember
