// Programs shared by runtime tests (built with ProgramBuilder, run with the test kernels and
// the fake backend), plus Harness: loads a program and one method with correctly sized,
// caller-owned memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"
#include "test/support/program_builder.h"

namespace ember {
namespace testing {

// out[B,3] = x[B,3] + bias[3] (bias = {10, 20, 30}, a constant). With `dynamic`, B <= 4
// varies per call; otherwise B == 4. Inputs {x}, outputs {out}.
MethodBuilder& add_broadcast_method(ProgramBuilder& pb, const std::string& name, bool dynamic);
// out[2,4] = a[2,3] @ w[3,4], w constant with w[k][j] = k * 4 + j. Inputs {a}, outputs {out}.
MethodBuilder& matmul_method(ProgramBuilder& pb, const std::string& name);
// y = x * (n + 1) computed with a JumpFalse loop: y = x; for (i = 0; i < n; ++i) y += x.
// Inputs {x f32[4], n Int (default 2)}, outputs {y, i}.
MethodBuilder& loop_method(ProgramBuilder& pb, const std::string& name);
// Mutable state s (int64 [1], initially 0): s += 1; out = s. Inputs {}, outputs {out}.
MethodBuilder& counter_method(ProgramBuilder& pb, const std::string& name);
// One delegate instruction on backend "test_fake" (scale 2 from a segment, bias 1 from a
// compile spec), then a kernel: mid = 2x + 1 (delegate); out = mid + x. Inputs {x f32[4]}.
MethodBuilder& delegate_method(ProgramBuilder& pb, const std::string& name);
// Every kind of value (None, Double, String, lists with symbolic refs, tensor lists, a
// dim-ordered tensor, a Free instruction) around a copy kernel. Inputs {x f32[2,2]}.
MethodBuilder& all_values_method(ProgramBuilder& pb, const std::string& name);

// One program with every method above (names: add, add_dynamic, matmul, loop, counter,
// delegate, values).
PteBytes kitchen_sink_program();

// Loads a program from caller memory (kept alive here) and one method with planned arenas
// sized from MethodMeta. All allocation happens in load()/load_method().
class Harness {
 public:
  Error load(const uint8_t* data, size_t size,
             Program::Verification verification = Program::Verification::Full);
  Error load(const PteBytes& pte) { return load(pte.data(), pte.size()); }
  Error load_method(const char* name, size_t method_bytes = 64 * 1024, size_t temp_bytes = 4096);

  Program& program() { return *program_; }
  Method& method() { return *method_; }
  MemoryAllocator& method_allocator() { return method_alloc_; }
  const char* message() const { return diag_.text(); }

 private:
  PteBytes bytes_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
  PteBytes method_mem_;
  PteBytes temp_mem_;
  std::vector<PteBytes> arenas_;
  std::vector<Span<uint8_t>> arena_spans_;
  MemoryAllocator method_alloc_;
  MemoryAllocator temp_alloc_;
  MemoryManager memory_;
  Diagnostic diag_;
  std::unique_ptr<Method> method_;  // last: destroyed first
};

// A float32 / int64 tensor view over caller vectors (sizes copied into the holder).
struct TensorHolder {
  std::vector<int64_t> sizes;
  Tensor tensor;
  EValue value;
  TensorHolder(ScalarType dtype, std::vector<int64_t> s, void* data) : sizes(std::move(s)) {
    tensor.dtype = dtype;
    tensor.rank = static_cast<uint8_t>(sizes.size());
    tensor.sizes = sizes.data();
    tensor.max_sizes = sizes.data();
    tensor.data = data;
    tensor.capacity_bytes = tensor_nbytes(dtype, sizes);
    value.tag = ValueTag::Tensor;
    value.as_tensor = &tensor;
  }
  TensorHolder(const TensorHolder&) = delete;
};

}  // namespace testing
}  // namespace ember
