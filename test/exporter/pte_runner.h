// Test helper: loads an exported .pte with the runtime (ember::Program / Method), arenas
// sized from MethodMeta and allocated with std::vector, and runs it on host arrays.
#pragma once

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "exporter/util/npy.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/program/program.h"

namespace ember {
namespace testing {

class PteRunner {
 public:
  // The method and temp allocators' sizes: zero-filled at each load, so tests that load
  // hundreds of small programs pass smaller ones (the defaults fit every shared model).
  explicit PteRunner(size_t method_bytes = 16 << 20, size_t temp_bytes = 64 << 20)
      : method_bytes_(method_bytes), temp_bytes_(temp_bytes) {}

  // Returns "" on success, else why loading failed.
  // `tracer` (optional, must outlive the runner) is given to load_method (event_tracer.h).
  std::string load(const std::vector<uint8_t>& pte, const char* method = "forward", EventTracer* tracer = nullptr) {
    file_.assign((pte.size() + 63) / 64 + 1, {});
    std::memcpy(file_.data(), pte.data(), pte.size());
    loader_ = std::make_unique<BufferDataLoader>(file_.data(), pte.size());
    Diagnostic diag;
    Result<Program> p = Program::load(loader_.get(), Program::Verification::Full, &diag);
    if (!p.ok()) return std::string("Program::load failed: ") + diag.message;
    program_ = std::make_unique<Program>(std::move(p.get()));
    Result<MethodMeta> meta = program_->method_meta(method);
    if (!meta.ok()) return "no method";
    for (size_t i = 0; i < meta->num_arenas(); ++i) arenas_.emplace_back(meta->arena_size(i).get() + 64);
    for (auto& a : arenas_) spans_.emplace_back(reinterpret_cast<uint8_t*>(align(a.data())), a.size() - 64);
    method_mem_.resize(method_bytes_);
    temp_mem_.resize(temp_bytes_);
    method_alloc_ = std::make_unique<MemoryAllocator>(method_mem_.data(), method_mem_.size());
    temp_alloc_ = std::make_unique<MemoryAllocator>(temp_mem_.data(), temp_mem_.size());
    mm_.method_allocator = method_alloc_.get();
    mm_.temp_allocator = temp_alloc_.get();
    mm_.planned_arenas = Span<Span<uint8_t>>(spans_.data(), spans_.size());
    Result<Method> m = program_->load_method(method, &mm_, &diag, nullptr, tracer);
    if (!m.ok()) return std::string("load_method failed: ") + diag.message;
    method_ = std::make_unique<Method>(std::move(m.get()));
    return "";
  }

  // Sets the inputs and executes; "" on success.
  std::string run(const std::vector<exporter::NpyArray>& inputs) {
    in_sizes_.clear();
    in_tensors_.assign(inputs.size(), Tensor());
    in_sizes_.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_sizes_[i] = inputs[i].shape;
      Tensor& t = in_tensors_[i];
      t.dtype = inputs[i].dtype;
      t.rank = static_cast<uint8_t>(inputs[i].shape.size());
      t.sizes = in_sizes_[i].data();
      t.max_sizes = in_sizes_[i].data();
      t.data = const_cast<uint8_t*>(inputs[i].data.data());
      t.capacity_bytes = inputs[i].data.size();
      EValue v;
      v.tag = ValueTag::Tensor;
      v.as_tensor = &t;
      if (method_->set_input(i, v) != Error::Ok) {
        return "set_input " + std::to_string(i) + ": " + method_->last_error_message();
      }
    }
    if (method_->execute() != Error::Ok) return std::string("execute: ") + method_->last_error_message();
    return "";
  }

  exporter::NpyArray output(size_t i) const {
    exporter::NpyArray a;
    const Tensor* t = method_->output(i).as_tensor;
    a.dtype = t->dtype;
    a.shape.assign(t->sizes, t->sizes + t->rank);
    a.data.assign(static_cast<const uint8_t*>(t->data), static_cast<const uint8_t*>(t->data) + t->nbytes());
    return a;
  }
  Method& method() { return *method_; }

 private:
  static void* align(void* p) {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63});
  }
  struct alignas(64) Block { uint8_t b[64]; };
  size_t method_bytes_, temp_bytes_;
  std::vector<Block> file_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
  std::vector<std::vector<uint8_t>> arenas_;
  std::vector<Span<uint8_t>> spans_;
  std::vector<uint8_t> method_mem_, temp_mem_;
  std::unique_ptr<MemoryAllocator> method_alloc_, temp_alloc_;
  MemoryManager mm_;
  std::unique_ptr<Method> method_;
  std::vector<Tensor> in_tensors_;
  std::vector<std::vector<int64_t>> in_sizes_;
};

// ||a - b|| / ||b|| (both converted to double); 1e30 on a shape mismatch.
// A float32 array of `shape` with values uniform in [-1, 1) from `rng` (dynamic-shape tests).
inline exporter::NpyArray random_npy(std::mt19937& rng, std::vector<int64_t> shape) {
  std::uniform_real_distribution<float> u(-1, 1);
  exporter::NpyArray x;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  x.shape = std::move(shape);
  x.data.resize(static_cast<size_t>(n) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    const float f = u(rng);
    std::memcpy(x.data.data() + i * sizeof(float), &f, sizeof(f));
  }
  return x;
}

inline double relative_l2(const exporter::NpyArray& a, const exporter::NpyArray& b) {
  if (a.shape != b.shape) return 1e30;
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = a.at(i) - b.at(i);
    num += d * d;
    den += b.at(i) * b.at(i);
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-12);
}

}  // namespace testing
}  // namespace ember
