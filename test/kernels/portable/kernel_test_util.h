// Test helper for portable kernels: builds tensors and values, calls a kernel by its
// registered name, and reads results back as doubles.
//
//   KernelTest k;
//   EValue* out = k.out(ScalarType::Float32, {2, 3});
//   ASSERT_EQ(k.run("aten::add.Tensor", {k.f({2, 3}, {...}), k.f({3}, {...}), k.i(1), out}), Error::Ok);
//   EXPECT_EQ(k.vals(out), (std::vector<double>{...}));
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "kernels/portable/util/dtype_util.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace testing {

// Runs tasks serially in reverse order while claiming several threads, so chunked kernels
// are exercised without real threads.
class SerialPool : public ThreadPool {
 public:
  void parallel_for(size_t count, void (*fn)(void*, size_t), void* context) override {
    for (size_t i = count; i > 0; --i) fn(context, i - 1);
  }
  size_t num_threads() const override { return 4; }
};

class KernelTest {
 public:
  // A tensor of `dtype` holding `values` (converted).
  EValue* t(ScalarType dtype, std::vector<int64_t> sizes, std::vector<double> values) {
    Holder& h = make(dtype, sizes, sizes, false);
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(h.tensor.numel()); ++i) {
      portable::store_as<double>(h.tensor.data, dtype, static_cast<int64_t>(i), values[i]);
    }
    return value_of(h);
  }
  EValue* f(std::vector<int64_t> sizes, std::vector<double> values) {
    return t(ScalarType::Float32, std::move(sizes), std::move(values));
  }
  EValue* l(std::vector<int64_t> sizes, std::vector<double> values) {
    return t(ScalarType::Int64, std::move(sizes), std::move(values));
  }
  EValue* bt(std::vector<int64_t> sizes, std::vector<double> values) {
    return t(ScalarType::Bool, std::move(sizes), std::move(values));
  }
  // A dynamic output with capacity for `max_sizes` (sizes start at max_sizes).
  EValue* out(ScalarType dtype, std::vector<int64_t> max_sizes, bool dynamic = true) {
    return value_of(make(dtype, max_sizes, max_sizes, dynamic));
  }
  EValue* i(int64_t v) { EValue* e = val(); e->tag = ValueTag::Int; e->as_int = v; return e; }
  EValue* d(double v) { EValue* e = val(); e->tag = ValueTag::Double; e->as_double = v; return e; }
  EValue* b(bool v) { EValue* e = val(); e->tag = ValueTag::Bool; e->as_bool = v; return e; }
  EValue* none() { return val(); }
  EValue* ilist(std::vector<int64_t> v) {
    int_lists_.push_back(std::move(v));
    EValue* e = val();
    e->tag = ValueTag::IntList;
    e->as_int_list = IntListValue{int_lists_.back().data(), nullptr, nullptr, int_lists_.back().size()};
    return e;
  }
  EValue* str(const char* s) {
    strings_.emplace_back(s);
    EValue* e = val();
    e->tag = ValueTag::String;
    e->as_string = StringValue{strings_.back().c_str(), strings_.back().size()};
    return e;
  }
  // Tensor list; a null entry makes an optional list with a None element.
  EValue* tlist(std::vector<EValue*> items, bool optional = false) {
    std::vector<Tensor*> ts;
    for (EValue* it : items) {
      if (it == nullptr || it->is_none()) optional = true;
      ts.push_back(it != nullptr && it->is_tensor() ? it->as_tensor : nullptr);
    }
    tensor_lists_.push_back(std::move(ts));
    EValue* e = val();
    e->tag = optional ? ValueTag::OptionalTensorList : ValueTag::TensorList;
    e->as_tensor_list = Span<Tensor* const>(tensor_lists_.back().data(), tensor_lists_.back().size());
    return e;
  }

  Error run(const char* op, std::vector<EValue*> args) {
    KernelFn fn = find_kernel(op);
    if (fn == nullptr) {
      last_error = std::string("no kernel ") + op;
      return Error::NotFound;
    }
    KernelContext ctx;
    ctx.diag = &diag;
    ctx.op_name = op;
    ctx.thread_pool = pool_override_ != nullptr ? pool_override_ : &pool_;
    ctx.temp = &temp_;
    std::memset(diag.message, 0, sizeof(diag.message));
    temp_.reset();
    Error e = fn(ctx, args.data(), args.size());
    last_error = diag.message;
    return e;
  }

  std::vector<double> vals(const EValue* v) const {
    const Tensor& t = *v->as_tensor;
    std::vector<double> r;
    for (int64_t k = 0; k < t.numel(); ++k) r.push_back(portable::load_as<double>(t.data, t.dtype, k));
    return r;
  }
  std::vector<int64_t> ivals(const EValue* v) const {
    const Tensor& t = *v->as_tensor;
    std::vector<int64_t> r;
    for (int64_t k = 0; k < t.numel(); ++k) r.push_back(portable::load_as<int64_t>(t.data, t.dtype, k));
    return r;
  }
  std::vector<int64_t> shape(const EValue* v) const {
    const Tensor& t = *v->as_tensor;
    return std::vector<int64_t>(t.sizes, t.sizes + t.rank);
  }
  ScalarType dtype(const EValue* v) const { return v->as_tensor->dtype; }

  // Runs later kernels on `pool` (e.g. a real multi-threaded pool) instead of SerialPool.
  void use_pool(ThreadPool* pool) { pool_override_ = pool; }

  Diagnostic diag;
  std::string last_error;

 private:
  struct Holder {
    Tensor tensor;
    std::vector<int64_t> sizes, max_sizes;
    std::vector<uint64_t> data;  // 8-byte aligned storage
  };
  Holder& make(ScalarType dtype, const std::vector<int64_t>& sizes, const std::vector<int64_t>& max,
               bool dynamic) {
    holders_.push_back(std::make_unique<Holder>());
    Holder& h = *holders_.back();
    h.sizes = sizes;
    h.max_sizes = max;
    int64_t n = 1;
    for (int64_t s : max) n *= s;
    size_t bytes = static_cast<size_t>(n) * element_size(dtype);
    h.data.assign(bytes / 8 + 2, 0);
    h.tensor.dtype = dtype;
    h.tensor.rank = static_cast<uint8_t>(sizes.size());
    h.tensor.dynamic = dynamic;
    h.tensor.sizes = h.sizes.data();
    h.tensor.max_sizes = h.max_sizes.data();
    h.tensor.data = h.data.data();
    h.tensor.capacity_bytes = bytes;
    return h;
  }
  EValue* value_of(Holder& h) {
    EValue* e = val();
    e->tag = ValueTag::Tensor;
    e->as_tensor = &h.tensor;
    return e;
  }
  EValue* val() {
    values_.emplace_back();
    return &values_.back();
  }

  std::deque<EValue> values_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::string> strings_;
  std::deque<std::vector<Tensor*>> tensor_lists_;
  std::vector<std::unique_ptr<Holder>> holders_;
  SerialPool pool_;
  ThreadPool* pool_override_ = nullptr;
  std::vector<uint64_t> temp_buf_ = std::vector<uint64_t>(1 << 17);
  MemoryAllocator temp_{temp_buf_.data(), temp_buf_.size() * 8};
};

}  // namespace testing
}  // namespace ember
