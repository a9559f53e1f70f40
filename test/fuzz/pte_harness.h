// The pte fuzzer's harness, shared with the regression tests (test/hardening): loads bytes
// as a .pte with Full verification, validates its bundled test cases (extension/bundled, as
// `ember verify` does before running them), then loads every method (arenas sized from MethodMeta,
// capped), feeds zero inputs at their upper-bound shapes and executes. Never crashes on
// any bytes (that is what the fuzzer checks); reports what happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "extension/bundled/bundled_cases.h"
#include "runtime/executor/method.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"

namespace ember {
namespace fuzz {

struct PteOutcome {
  Error load = Error::Ok;
  std::string load_message;   // why Program::load failed
  int methods_loaded = 0;
  int executions_ok = 0;
  std::vector<std::string> messages;  // each load_method/execute failure, in order
};

constexpr size_t kMaxArenaBytes = 64u << 20;    // skip methods whose planned arenas need more
constexpr size_t kMaxInputBytes = 16u << 20;
constexpr size_t kMethodAllocatorBytes = 4u << 20;
constexpr size_t kTempBytes = 8u << 20;

// Heap buffer of exactly `size` bytes (so ASan sees any overrun), 64-byte aligned.
struct Buffer {
  explicit Buffer(size_t size) : size(size) {
    data = static_cast<uint8_t*>(operator new(size == 0 ? 1 : size, std::align_val_t(64)));
    std::memset(data, 0, size);
  }
  ~Buffer() { operator delete(data, std::align_val_t(64)); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint8_t* data;
  size_t size;
};

inline void run_method(const Program& program, const char* name, PteOutcome* outcome) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return;
  // Exercise every MethodMeta accessor, including one past the end.
  for (size_t i = 0; i <= meta->num_inputs(); ++i) {
    (void)meta->input_tag(i);
    (void)meta->input_tensor_info(i);
  }
  for (size_t i = 0; i <= meta->num_outputs(); ++i) {
    (void)meta->output_tag(i);
    (void)meta->output_tensor_info(i);
  }
  (void)meta->num_instructions();
  (void)meta->num_delegates();
  (void)meta->num_mutable_state_tensors();

  size_t total = 0;
  std::vector<std::unique_ptr<Buffer>> arenas;
  std::vector<Span<uint8_t>> spans;
  if (meta->num_arenas() > 64) return;
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    Result<size_t> s = meta->arena_size(i);
    if (!s.ok() || *s > kMaxArenaBytes || total + *s > kMaxArenaBytes) return;
    total += *s;
    arenas.emplace_back(new Buffer(*s));
    spans.emplace_back(arenas.back()->data, arenas.back()->size);
  }
  static Buffer* method_mem = new Buffer(kMethodAllocatorBytes);
  static Buffer* temp_mem = new Buffer(kTempBytes);
  MemoryAllocator method_alloc(method_mem->data, method_mem->size);
  MemoryAllocator temp_alloc(temp_mem->data, temp_mem->size);
  MemoryManager mm;
  mm.method_allocator = &method_alloc;
  mm.planned_arenas = Span<Span<uint8_t>>(spans.data(), spans.size());
  mm.temp_allocator = &temp_alloc;
  Diagnostic diag;
  Result<Method> method = program.load_method(name, &mm, &diag);
  if (!method.ok()) {
    outcome->messages.push_back(diag.message);
    return;
  }
  ++outcome->methods_loaded;

  // Inputs: zeros at the upper-bound shape; scalars get 0 / 0.0 / false.
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<std::vector<int64_t>> sizes;
  for (size_t i = 0; i < method->num_inputs(); ++i) {
    ValueTag tag = meta->input_tag(i);
    if (tag == ValueTag::Int || tag == ValueTag::Double || tag == ValueTag::Bool) {
      EValue v;
      v.tag = tag;
      v.as_int = 0;
      (void)method->set_input(i, v);
      continue;
    }
    Result<TensorInfo> info = meta->input_tensor_info(i);
    if (!info.ok() || info->nbytes > kMaxInputBytes) continue;
    sizes.emplace_back(info->max_sizes.begin(), info->max_sizes.end());
    buffers.emplace_back(new Buffer(info->nbytes));
    Tensor t;
    t.dtype = info->dtype;
    t.rank = static_cast<uint8_t>(sizes.back().size());
    t.sizes = sizes.back().data();
    t.max_sizes = sizes.back().data();
    t.data = buffers.back()->data;
    t.capacity_bytes = info->nbytes;
    EValue v;
    v.tag = ValueTag::Tensor;
    v.as_tensor = &t;
    (void)method->set_input(i, v);
  }
  auto run = [&]() {
    if (method->execute() == Error::Ok) {
      ++outcome->executions_ok;
    } else {
      outcome->messages.push_back(method->last_error_message());
    }
  };
  run();
  run();  // a second run sees the state (and sizes) the first one left
  (void)method->reset_state();
  run();
}

inline PteOutcome run_pte_bytes(const uint8_t* data, size_t size) {
  PteOutcome outcome;
  // An exactly sized, 64-byte aligned copy: ASan then sees reads past the end of the file.
  Buffer bytes(size);
  if (size > 0) std::memcpy(bytes.data, data, size);
  BufferDataLoader loader(bytes.data, size);
  Diagnostic diag;
  Result<Program> program = Program::load(&loader, Program::Verification::Full, &diag);
  outcome.load = program.error();
  if (!program.ok()) {
    outcome.load_message = diag.message;
    return outcome;
  }
  if (validate_bundled_cases(*program, &diag) != Error::Ok) outcome.messages.push_back(diag.message);
  for (size_t mi = 0; mi < program->num_methods() && mi < 8; ++mi) {
    Result<const char*> name = program->method_name(mi);
    if (name.ok()) run_method(*program, *name, &outcome);
  }
  return outcome;
}

}  // namespace fuzz
}  // namespace ember
