#include "delegates/xnnpack/runtime/layout.h"

#include <pthreadpool.h>

#include <cstring>

namespace ember {
namespace xnnpack {
namespace {

constexpr size_t kTile = 32;
// Below this many elements a parallel dispatch costs more than it saves.
constexpr size_t kParallelThreshold = 64 * 1024;

template <typename T>
struct TransposeJob {
  const T* src;
  T* dst;
  size_t rows;  // of src
  size_t cols;  // of src
};

// Transposes the src block [i0, i0+ti) x [j0, j0+tj) of one image (image index b).
template <typename T>
void transpose_tile(void* context, size_t b, size_t i0, size_t j0, size_t ti, size_t tj) {
  const TransposeJob<T>& job = *static_cast<const TransposeJob<T>*>(context);
  const size_t image = job.rows * job.cols;
  const T* src = job.src + b * image;
  T* dst = job.dst + b * image;
  for (size_t i = i0; i < i0 + ti; ++i) {
    const T* s = src + i * job.cols;
    for (size_t j = j0; j < j0 + tj; ++j) dst[j * job.rows + i] = s[j];
  }
}

template <typename T>
void transpose(const T* src, T* dst, size_t batch, size_t rows, size_t cols, pthreadpool* pool) {
  if (rows == 1 || cols == 1) {
    std::memcpy(dst, src, batch * rows * cols * sizeof(T));
    return;
  }
  TransposeJob<T> job{src, dst, rows, cols};
  if (pool != nullptr && batch * rows * cols >= kParallelThreshold) {
    pthreadpool_parallelize_3d_tile_2d(pool, transpose_tile<T>, &job, batch, rows, cols, kTile, kTile, 0);
    return;
  }
  for (size_t b = 0; b < batch; ++b) {
    for (size_t i = 0; i < rows; i += kTile) {
      const size_t ti = rows - i < kTile ? rows - i : kTile;
      for (size_t j = 0; j < cols; j += kTile) {
        transpose_tile<T>(&job, b, i, j, ti, cols - j < kTile ? cols - j : kTile);
      }
    }
  }
}

}  // namespace

void nchw_to_nhwc(const float* src, float* dst, size_t n, size_t c, size_t hw, pthreadpool* pool) {
  transpose(src, dst, n, c, hw, pool);
}

void nhwc_to_nchw(const float* src, float* dst, size_t n, size_t c, size_t hw, pthreadpool* pool) {
  transpose(src, dst, n, hw, c, pool);
}

void nchw_to_nhwc(const int8_t* src, int8_t* dst, size_t n, size_t c, size_t hw, pthreadpool* pool) {
  transpose(src, dst, n, c, hw, pool);
}

void nhwc_to_nchw(const int8_t* src, int8_t* dst, size_t n, size_t c, size_t hw, pthreadpool* pool) {
  transpose(src, dst, n, hw, c, pool);
}

}  // namespace xnnpack
}  // namespace ember
