// The portable kernels as the Vulkan tests' reference: calls one kernel by its registry name on
// host float32 / int64 tensors (args in ATen schema order, then the output), so a GPU path is
// checked against what the CPU runtime computes, not against a second hand-written loop.
// Every tensor and list lives as long as the Portable object.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test/delegates/vulkan/vulkan_test_util.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace vulkan {
namespace testing {

class Portable {
 public:
  EValue* t(const Sizes& s, const Floats& v) {
    ::ember::testing::TestTensor& x = add(ScalarType::Float32, s);
    x.set(v);
    return tensor(x);
  }
  EValue* t64(const Sizes& s, const std::vector<int64_t>& v) {
    ::ember::testing::TestTensor& x = add(ScalarType::Int64, s);
    std::memcpy(x.data<int64_t>(), v.data(), v.size() * sizeof(int64_t));
    return tensor(x);
  }
  // The output tensor (NaN until the kernel writes it); run() returns the last one made.
  EValue* out(const Sizes& s) {
    ::ember::testing::TestTensor& x = add(ScalarType::Float32, s);
    x.fill(NAN);
    out_ = &x;
    return tensor(x);
  }
  EValue* i(int64_t x) { return r_.i(x); }
  EValue* d(double x) { return r_.d(x); }
  EValue* b(bool x) { return r_.b(x); }
  EValue* none() { return r_.none(); }
  EValue* ints(std::vector<int64_t> xs) { return r_.ints(std::move(xs)); }
  EValue* str(const char* s) { return r_.str(s); }
  // A tensor list of tensors made by t() / t64().
  EValue* list(std::vector<EValue*> ts) {
    std::vector<::ember::testing::TestTensor*> l;
    for (EValue* e : ts) l.push_back(owner_.at(e));
    return r_.tensors(std::move(l));
  }
  ::testing::AssertionResult run(const char* name, std::vector<EValue*> args, Floats* result) {
    const Error e = r_.run(name, std::move(args));
    if (e == Error::NotFound) return ::testing::AssertionFailure() << "no portable kernel " << name;
    if (e != Error::Ok) return ::testing::AssertionFailure() << name << ": " << error_name(e) << ": " << r_.message();
    *result = out_->values();
    return ::testing::AssertionSuccess();
  }

 private:
  ::ember::testing::TestTensor& add(ScalarType dt, const Sizes& s) {
    tensors_.emplace_back(dt, std::vector<int64_t>(s.begin(), s.end()));
    return tensors_.back();
  }
  EValue* tensor(::ember::testing::TestTensor& x) {
    EValue* v = r_.tensor(x);
    owner_[v] = &x;
    return v;
  }
  ::ember::testing::KernelRunner r_;
  std::deque<::ember::testing::TestTensor> tensors_;
  std::map<EValue*, ::ember::testing::TestTensor*> owner_;
  ::ember::testing::TestTensor* out_ = nullptr;
};

}  // namespace testing
}  // namespace vulkan
}  // namespace ember
