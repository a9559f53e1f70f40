// The portable kernels as the Vulkan tests' reference: calls one kernel by its registry name on
// host float32 / int64 tensors (args in ATen schema order, then the output), so a GPU path is
// checked against what the CPU runtime computes, not against a second hand-written loop.
// Every tensor and list lives as long as the Portable object.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_allocator.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {

class Portable {
 public:
  Portable() : temp_buf_(new uint8_t[kTempBytes]), temp_(temp_buf_.get(), kTempBytes) {}
  EValue* t(const Sizes& s, const Floats& v) { return tensor(ScalarType::Float32, s, v.data(), v.size() * 4); }
  EValue* t64(const Sizes& s, const std::vector<int64_t>& v) {
    return tensor(ScalarType::Int64, s, v.data(), v.size() * 8);
  }
  EValue* out(const Sizes& s) {
    Floats z(static_cast<size_t>(numel(s)), NAN);
    out_ = tensor(ScalarType::Float32, s, z.data(), z.size() * 4);
    return out_;
  }
  EValue* i(int64_t x) { EValue& v = push(); v.tag = ValueTag::Int; v.as_int = x; return &v; }
  EValue* d(double x) { EValue& v = push(); v.tag = ValueTag::Double; v.as_double = x; return &v; }
  EValue* b(bool x) { EValue& v = push(); v.tag = ValueTag::Bool; v.as_bool = x; return &v; }
  EValue* none() { return &push(); }
  EValue* ints(std::vector<int64_t> xs) {
    lists_.push_back(std::move(xs));
    EValue& v = push();
    v.tag = ValueTag::IntList;
    v.as_int_list = IntListValue{lists_.back().data(), nullptr, nullptr, lists_.back().size()};
    return &v;
  }
  EValue* str(const char* s) {
    EValue& v = push();
    v.tag = ValueTag::String;
    v.as_string = StringValue{s, std::strlen(s)};
    return &v;
  }
  EValue* list(std::vector<EValue*> ts) {
    std::vector<Tensor*> l;
    for (EValue* e : ts) l.push_back(e->as_tensor);
    tensor_lists_.push_back(std::move(l));
    EValue& v = push();
    v.tag = ValueTag::TensorList;
    v.as_tensor_list = Span<Tensor* const>(tensor_lists_.back().data(), tensor_lists_.back().size());
    return &v;
  }
  // Runs `name`; the result is the tensor made by the last out().
  ::testing::AssertionResult run(const char* name, std::vector<EValue*> args, Floats* result) {
    KernelFn fn = find_kernel(name);
    if (fn == nullptr) return ::testing::AssertionFailure() << "no portable kernel " << name;
    temp_.reset();
    KernelContext ctx;
    ctx.temp = &temp_;
    ctx.diag = &diag_;
    ctx.op_name = name;
    Error e = fn(ctx, args.data(), args.size());
    if (e != Error::Ok) return ::testing::AssertionFailure() << name << ": " << error_name(e) << ": " << diag_.text();
    const Tensor& o = *out_->as_tensor;
    result->assign(o.data_as<float>(), o.data_as<float>() + o.numel());
    return ::testing::AssertionSuccess();
  }

 private:
  static constexpr size_t kTempBytes = size_t(16) << 20;
  EValue& push() { values_.emplace_back(); return values_.back(); }
  EValue* tensor(ScalarType dt, const Sizes& s, const void* data, size_t nbytes) {
    lists_.push_back(s);
    bytes_.emplace_back(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
    tensors_.emplace_back();
    Tensor& t = tensors_.back();
    t.dtype = dt;
    t.rank = static_cast<uint8_t>(s.size());
    t.sizes = lists_.back().data();
    t.max_sizes = lists_.back().data();
    t.data = bytes_.back().data();
    t.capacity_bytes = nbytes;
    EValue& v = push();
    v.tag = ValueTag::Tensor;
    v.as_tensor = &t;
    return &v;
  }
  std::deque<EValue> values_;
  std::deque<Tensor> tensors_;
  std::deque<std::vector<int64_t>> lists_;
  std::deque<std::vector<uint8_t>> bytes_;
  std::deque<std::vector<Tensor*>> tensor_lists_;
  std::unique_ptr<uint8_t[]> temp_buf_;
  MemoryAllocator temp_;
  Diagnostic diag_;
  EValue* out_ = nullptr;
};

}  // namespace testing
}  // namespace vulkan
}  // namespace ember
