// The sliding window of the N-d pooling kernels (pooling.cc: 1-D/2-D, pooling3d.cc: 3-D):
// kernel/stride/padding/dilation read from the op's int lists with PyTorch's rules, and the
// pooled output size (ceil_mode included).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"

namespace ember {
namespace portable {

template <int N>
struct PoolWindow {
  int64_t kernel[N];
  int64_t stride[N];
  int64_t pad[N];
  int64_t dilation[N];
  bool ceil_mode = false;

  PoolWindow() {
    for (int i = 0; i < N; ++i) {
      kernel[i] = 1;
      stride[i] = 1;
      pad[i] = 0;
      dilation[i] = 1;
    }
  }
};

// Output size of one pooled dimension, as PyTorch computes it.
inline int64_t pooled_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation, bool ceil_mode) {
  const int64_t span = in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -ceil_div(-span, stride)) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Reads the kernel/stride/padding(/dilation: d_i != 0) lists of `spatial` (<= N) entries into
// the trailing slots of `win` (the leading ones keep the identity window). An empty stride
// means stride = kernel. False (error recorded) on an invalid window.
template <int N>
bool read_pool_window(KernelArgs& a, int spatial, size_t k_i, size_t s_i, size_t p_i, size_t d_i,
                      PoolWindow<N>& win) {
  Span<const int64_t> k = a.int_list(k_i);
  Span<const int64_t> s = a.int_list(s_i);
  Span<const int64_t> p = a.int_list(p_i);
  Span<const int64_t> d = d_i != 0 ? a.int_list(d_i) : Span<const int64_t>();
  if (!a.ok()) return false;
  if (k.size() == 0) return a.fail("kernel_size must not be empty");
  const int first = N - spatial;
  for (int i = 0; i < spatial; ++i) {
    win.kernel[first + i] = list_at(k, i, 1);
    win.stride[first + i] = list_at(s, i, win.kernel[first + i]);
    win.pad[first + i] = list_at(p, i, 0);
    win.dilation[first + i] = list_at(d, i, 1);
  }
  // Bounded so the window arithmetic below and in pooled_size() cannot overflow int64.
  constexpr int64_t kMaxWindowParam = INT32_MAX;
  for (int i = 0; i < N; ++i) {
    if (win.kernel[i] > kMaxWindowParam || win.stride[i] > kMaxWindowParam || win.dilation[i] > kMaxWindowParam ||
        win.pad[i] > kMaxWindowParam) {
      return a.fail("kernel, stride, padding and dilation must be below 2^31");
    }
    if (win.kernel[i] < 1 || win.stride[i] < 1 || win.dilation[i] < 1 || win.pad[i] < 0) {
      return a.fail("kernel, stride and dilation must be positive, padding non-negative");
    }
    if (win.pad[i] * 2 > win.dilation[i] * (win.kernel[i] - 1) + 1) {
      return a.fail("padding must be at most half the (dilated) kernel size");
    }
  }
  return true;
}

}  // namespace portable
}  // namespace ember
