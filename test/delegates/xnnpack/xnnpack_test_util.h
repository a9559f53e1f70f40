// Test helpers for the XNNPACK delegate: host tensors wrapped as EValues, a runner that
// drives one delegate through the Backend interface, naive NCHW reference ops.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "delegates/xnnpack/runtime/xnnpack_backend.h"
#include "runtime/backend/backend.h"
#include "runtime/core/evalue.h"
#include "runtime/memory/memory_allocator.h"

namespace ember {
namespace xnnpack {
namespace testing {

// A float32 tensor owning its sizes and data (capacity = max_sizes, plus guard floats that
// must stay untouched).
class HostTensor {
 public:
  explicit HostTensor(std::vector<int64_t> sizes, bool dynamic = false, std::vector<int64_t> max_sizes = {});
  EValue* value() { return &value_; }
  Tensor& tensor() { return tensor_; }
  float* data() { return data_.data() + kGuard; }
  std::vector<float> values() const;  // current numel() elements
  std::vector<int64_t> sizes() const { return std::vector<int64_t>(sizes_.begin(), sizes_.end()); }
  void set_sizes(const std::vector<int64_t>& sizes);  // within max_sizes
  void fill(const std::vector<float>& v);
  bool guards_intact() const;

  static constexpr size_t kGuard = 16;
  static constexpr float kGuardValue = -12345.0f;

 private:
  std::vector<int64_t> sizes_;
  std::vector<int64_t> max_sizes_;
  std::vector<float> data_;
  Tensor tensor_;
  EValue value_;
};

// Initialises one delegate through find_backend("xnnpack") with a method allocator over
// owned memory; destroys it on destruction.
class Runner {
 public:
  explicit Runner(size_t method_bytes = 8 << 20);
  ~Runner();
  Error init(std::vector<uint8_t> blob, const std::vector<std::pair<std::string, std::vector<uint8_t>>>& specs = {},
             const Program* program = nullptr);
  Error run(const std::vector<HostTensor*>& args);
  const char* message() const { return diag_.text(); }
  void* handle() const { return handle_; }
  XnnpackDelegateStats stats() const { return delegate_stats(handle_); }
  MemoryAllocator& allocator() { return alloc_; }

 private:
  std::vector<uint8_t> memory_;
  MemoryAllocator alloc_;
  std::vector<uint8_t> blob_;
  Diagnostic diag_;
  Backend* backend_ = nullptr;
  void* handle_ = nullptr;
};

std::vector<float> random_vector(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f);
size_t numel(const std::vector<int64_t>& sizes);
// Max |a - b| / (1 + |b|) over all elements; +inf when the sizes differ.
double max_error(const std::vector<float>& a, const std::vector<float>& b);

// ---- naive references (PyTorch semantics, NCHW) ----
struct Conv2dArgs {
  int64_t stride[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};  // top, right, bottom, left
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
  float lo = -1e30f, hi = 1e30f;
};
std::vector<float> ref_conv2d(const std::vector<float>& x, const std::vector<int64_t>& xs, const std::vector<float>& w,
                              const std::vector<int64_t>& ws, const float* bias, const Conv2dArgs& a,
                              std::vector<int64_t>* out_sizes);
// Pooling over NCHW. avg: padding excluded from the divisor.
std::vector<float> ref_pool2d(bool max, const std::vector<float>& x, const std::vector<int64_t>& xs, int64_t kh,
                              int64_t kw, const Conv2dArgs& a, std::vector<int64_t>* out_sizes);
std::vector<float> ref_linear(const std::vector<float>& x, int64_t rows, int64_t k, const std::vector<float>& w,
                              int64_t o, const float* bias, float lo = -1e30f, float hi = 1e30f);
// Numpy-broadcast binary op (`op` is '+', '-', '*', '/', 'M' max, 'm' min, 'q' squared diff).
std::vector<float> ref_binary(char op, const std::vector<float>& a, const std::vector<int64_t>& as,
                              const std::vector<float>& b, const std::vector<int64_t>& bs,
                              std::vector<int64_t>* out_sizes);
std::vector<float> ref_softmax_lastdim(const std::vector<float>& x, int64_t rows, int64_t cols);
// upsample_bilinear2d (NCHW).
std::vector<float> ref_resize_bilinear(const std::vector<float>& x, const std::vector<int64_t>& xs, int64_t oh,
                                       int64_t ow, bool align_corners);

}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
