// Test harness for calling one registered kernel by name on hand-built tensors.
//
//   KernelRunner r;
//   TestTensor x(ScalarType::Float32, {2, 3}), out(ScalarType::Float32, {2, 3});
//   x.fill_random(rng);
//   EXPECT_EQ(r.run("aten::relu.default", {r.tensor(x), r.tensor(out)}), Error::Ok);
//
// Every TestTensor has guard bytes after its capacity; guard_ok() says whether a kernel
// wrote past the end. The runner owns the EValues and a temp allocator (scratch).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace testing {

class TestTensor {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr uint8_t kGuardByte = 0xA5;

  // capacity_elements < 0: exactly numel(sizes). dynamic: resize_tensor may change sizes.
  TestTensor(ScalarType dtype, std::vector<int64_t> sizes, int64_t capacity_elements = -1,
             bool dynamic = false)
      : sizes_(std::move(sizes)), max_sizes_(sizes_) {
    int64_t numel = 1;
    for (int64_t s : sizes_) numel *= s;
    if (capacity_elements < 0) capacity_elements = numel;
    size_t capacity = static_cast<size_t>(capacity_elements) * element_size(dtype);
    storage_.assign(capacity + kGuardBytes + 64, 0);
    // 64-byte aligned start inside storage_.
    uintptr_t base = reinterpret_cast<uintptr_t>(storage_.data());
    offset_ = static_cast<size_t>((64 - base % 64) % 64);
    std::memset(storage_.data() + offset_ + capacity, kGuardByte, kGuardBytes);
    t_.dtype = dtype;
    t_.rank = static_cast<uint8_t>(sizes_.size());
    t_.dynamic = dynamic;
    t_.sizes = sizes_.data();
    t_.max_sizes = max_sizes_.data();
    t_.data = storage_.data() + offset_;
    t_.capacity_bytes = capacity;
  }
  TestTensor(const TestTensor&) = delete;
  TestTensor& operator=(const TestTensor&) = delete;

  Tensor& tensor() { return t_; }
  float* f() { return t_.data_as<float>(); }
  template <typename T>
  T* data() { return t_.data_as<T>(); }
  int64_t numel() const { return t_.numel(); }
  std::vector<int64_t> sizes() const { return std::vector<int64_t>(t_.sizes, t_.sizes + t_.rank); }
  std::vector<float> values() const {
    const float* p = t_.data_as<float>();
    return std::vector<float>(p, p + t_.numel());
  }
  void set(const std::vector<float>& v) { std::memcpy(t_.data, v.data(), v.size() * sizeof(float)); }
  void fill_random(std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> d(lo, hi);
    for (int64_t i = 0; i < t_.numel(); ++i) f()[i] = d(rng);
  }
  void fill(float v) {
    for (int64_t i = 0; i < t_.numel(); ++i) f()[i] = v;
  }
  bool guard_ok() const {
    const uint8_t* g = storage_.data() + offset_ + t_.capacity_bytes;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (g[i] != kGuardByte) return false;
    }
    return true;
  }

 private:
  std::vector<int64_t> sizes_;
  std::vector<int64_t> max_sizes_;
  std::vector<uint8_t> storage_;
  size_t offset_ = 0;
  Tensor t_;
};

class KernelRunner {
 public:
  explicit KernelRunner(size_t temp_bytes = size_t{64} << 20, ThreadPool* pool = nullptr)
      : temp_buffer_(new uint8_t[temp_bytes]), temp_(temp_buffer_.get(), temp_bytes), pool_(pool) {}

  EValue* tensor(TestTensor& t) {
    EValue& v = push();
    v.tag = ValueTag::Tensor;
    v.as_tensor = &t.tensor();
    return &v;
  }
  EValue* none() { return &push(); }
  EValue* i(int64_t x) {
    EValue& v = push();
    v.tag = ValueTag::Int;
    v.as_int = x;
    return &v;
  }
  EValue* d(double x) {
    EValue& v = push();
    v.tag = ValueTag::Double;
    v.as_double = x;
    return &v;
  }
  EValue* b(bool x) {
    EValue& v = push();
    v.tag = ValueTag::Bool;
    v.as_bool = x;
    return &v;
  }
  EValue* ints(std::vector<int64_t> xs) {
    int_lists_.push_back(std::move(xs));
    EValue& v = push();
    v.tag = ValueTag::IntList;
    v.as_int_list = IntListValue{int_lists_.back().data(), nullptr, nullptr, int_lists_.back().size()};
    return &v;
  }
  EValue* str(const char* s) {
    EValue& v = push();
    v.tag = ValueTag::String;
    v.as_string = StringValue{s, std::strlen(s)};
    return &v;
  }
  // Null entries make an optional tensor list.
  EValue* tensors(std::vector<TestTensor*> ts, bool optional = false) {
    std::vector<Tensor*> list;
    for (TestTensor* t : ts) list.push_back(t != nullptr ? &t->tensor() : nullptr);
    tensor_lists_.push_back(std::move(list));
    EValue& v = push();
    v.tag = optional ? ValueTag::OptionalTensorList : ValueTag::TensorList;
    v.as_tensor_list = Span<Tensor* const>(tensor_lists_.back().data(), tensor_lists_.back().size());
    return &v;
  }

  // Finds the kernel and calls it; NotFound when no kernel is registered.
  Error run(const char* name, std::vector<EValue*> args) {
    KernelFn fn = find_kernel(name);
    if (fn == nullptr) return Error::NotFound;
    temp_.reset();
    KernelContext ctx;
    ctx.temp = use_temp_ ? &temp_ : nullptr;
    ctx.thread_pool = pool_;
    ctx.diag = &diag_;
    ctx.op_name = name;
    diag_.message[0] = '\0';
    return fn(ctx, args.data(), args.size());
  }
  std::string message() const { return diag_.message; }
  void set_use_temp(bool use) { use_temp_ = use; }
  void set_pool(ThreadPool* pool) { pool_ = pool; }
  size_t temp_high_water() const { return temp_.high_water(); }

 private:
  EValue& push() {
    values_.emplace_back();
    return values_.back();
  }
  std::deque<EValue> values_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<Tensor*>> tensor_lists_;
  std::unique_ptr<uint8_t[]> temp_buffer_;  // uninitialised: kernels must not read it
  MemoryAllocator temp_;
  ThreadPool* pool_ = nullptr;
  bool use_temp_ = true;
  Diagnostic diag_;
};

// A serial ThreadPool that reports `n` threads and runs tasks in reverse order, to exercise
// the parallel code paths (chunking, per-task state) deterministically in unit tests.
class ReverseOrderPool : public ThreadPool {
 public:
  explicit ReverseOrderPool(size_t n) : n_(n) {}
  void parallel_for(size_t count, void (*fn)(void*, size_t), void* context) override {
    for (size_t i = count; i > 0; --i) fn(context, i - 1);
  }
  size_t num_threads() const override { return n_; }

 private:
  size_t n_;
};

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         float tol = 1e-4f, const char* what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = (std::isnan(want[i]) && std::isnan(got[i])) ||
                    (std::isinf(want[i]) && got[i] == want[i]) ||
                    std::fabs(got[i] - want[i]) <= tol * (1.0f + std::fabs(want[i]));
    if (!ok && ++bad <= 5) {
      ADD_FAILURE() << what << " index " << i << ": got " << got[i] << " want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

}  // namespace testing
}  // namespace ember
