// Shared by the Vulkan LLM op tests (vulkan_llm_ops_test.cc, vulkan_weight_only_test.cc): a
// backend handle whose outputs the runtime may resize, one-shot runs, and their tolerances.
#pragma once

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_fp16.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {

constexpr float kTol32 = 1e-5f;  // near(): |got - want| <= tol * (1 + |want|)
constexpr float kTol16 = 2e-3f;

// A backend handle (like Delegate in vulkan_test_util.h) whose outputs the runtime may resize
// (dynamic sizes: HostTensor::sizes is updated after execute), with reset_state. Keeps the blob
// alive: State tensors' initial bytes are read from it again on reset.
class Runner {
 public:
  ~Runner() {
    if (handle_ != nullptr) vulkan_backend().destroy(handle_);
  }
  ::testing::AssertionResult init(const VulkanBlobBuilder& b) {
    if (!b.ok()) return ::testing::AssertionFailure() << "builder: " << b.error();
    blob_ = b.build();
    BackendInitContext ctx{nullptr, nullptr, nullptr, &diag_};
    Result<void*> h =
        vulkan_backend().init(ctx, Span<const uint8_t>(blob_.data(), blob_.size()), Span<const CompileSpecView>());
    if (!h.ok()) return ::testing::AssertionFailure() << "init: " << error_name(h.error()) << ": " << diag_.text();
    handle_ = *h;
    return ::testing::AssertionSuccess();
  }
  Error execute(std::vector<HostTensor>& ins, std::vector<HostTensor>& outs) {
    std::vector<std::unique_ptr<Arg>> args;
    std::vector<EValue*> ptrs;
    for (HostTensor& h : ins) args.emplace_back(new Arg(h));
    for (HostTensor& h : outs) {
      args.emplace_back(new Arg(h));
      args.back()->tensor.dynamic = true;  // capacity: the bound
    }
    for (auto& a : args) ptrs.push_back(&a->value);
    BackendExecuteContext ctx{nullptr, nullptr, &diag_};
    Error e = vulkan_backend().execute(ctx, handle_, ptrs.data(), ptrs.size());
    for (size_t k = 0; k < outs.size(); ++k) outs[k].sizes = args[ins.size() + k]->sizes;
    return e;
  }
  Error reset() { return vulkan_backend().reset_state(handle_, &diag_); }
  const VulkanGraph& graph() const { return *static_cast<const VulkanGraph*>(handle_); }
  const char* message() const { return diag_.text(); }

 private:
  std::vector<uint8_t> blob_;
  void* handle_ = nullptr;
  Diagnostic diag_;
};

// Every value survives float -> fp16 -> float (it came out of an fp16 buffer).
inline ::testing::AssertionResult all_fp16(const Floats& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (half_to_float(float_to_half(v[i])) != v[i])
      return ::testing::AssertionFailure() << "element " << i << " = " << v[i] << " is not an fp16 value";
  return ::testing::AssertionSuccess();
}

// Builds `b`, runs it once on `ins`, returns output `y`.
inline ::testing::AssertionResult run1(const VulkanBlobBuilder& b, std::vector<HostTensor> ins, int y, Floats* out) {
  Runner r;
  ::testing::AssertionResult ok = r.init(b);
  if (!ok) return ok;
  std::vector<HostTensor> outs{nan_out(b.sizes(y))};
  Error e = r.execute(ins, outs);
  if (e != Error::Ok) return ::testing::AssertionFailure() << "execute: " << error_name(e) << ": " << r.message();
  *out = values(outs[0]);
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace vulkan
}  // namespace ember
