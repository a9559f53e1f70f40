// Method: one initialised, executable method of a Program (e.g. "forward").
//
// Phases: Program::load_method() validates memory, builds the value table, resolves every
// kernel and initialises delegates (all allocation happens here, from the MemoryManager's
// method allocator). Then set_input()/bind_input(), execute(), output() as often as wanted:
// execute() performs no heap allocation and no system call.
//
// Lifetimes: the Program, the MemoryManager's allocators and arenas, and any caller memory
// bound with bind_input()/set_output_buffer() must outlive the Method (bound buffers: until
// the next execute() returns). Mutable state (e.g. a KV cache) lives in a planned arena and
// persists across execute() calls until reset_state(); state the program shares between
// methods lives in the caller's MemoryManager::shared_state buffers instead, so what one
// method writes the next reads.
// Thread-safety: none; use one Method per thread (several Methods may share a Program).
//
// Event tracing is optional code: the tracing entry points (init/load_method with an
// EventTracer, set_event_tracer) are defined in method_tracing.cc, and execute() reaches the
// traced instruction loop only through a pointer those entry points set, so a binary that
// never attaches a tracer links no tracing code (tools/size/measure_size.sh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/backend/backend.h"
#include "runtime/backend/delegate_init.h"
#include "runtime/core/evalue.h"
#include "runtime/core/event_tracer.h"
#include "runtime/core/result.h"
#include "runtime/kernel/kernel_registry.h"
#include "runtime/memory/memory_manager.h"
#include "runtime/platform/diagnostic.h"
#include "runtime/program/method_meta.h"
#include "runtime/program/program.h"

namespace ember {
namespace schema {
struct Method;
}
class Method;

namespace internal {
// The data of a Method (below), all trivially copyable: moving a Method is one block copy.
struct MethodData {
  const Program* program_ = nullptr;
  const schema::Method* method_ = nullptr;
  MemoryManager memory_;
  EValue* values_ = nullptr;
  size_t num_values_ = 0;
  size_t num_instructions_ = 0;
  // The inputs or the outputs of a method.
  struct Io {
    const uint32_t* indices = nullptr;   // into values_
    void** planned_data = nullptr;       // planned storage of each tensor
    size_t* planned_capacity = nullptr;
    size_t num = 0;
  };
  Io inputs_;
  Io outputs_;
  uint32_t* state_values_ = nullptr;          // mutable-state tensors
  Tensor** state_tensors_ = nullptr;          // each one's Tensor as init built it
  size_t num_state_values_ = 0;
  Backend** delegate_backends_ = nullptr;
  void** delegate_handles_ = nullptr;
  const char* delegate_names_ = nullptr;       // "<backend>#<index>", kDelegateNameBytes each
  size_t num_delegates_ = 0;
  ThreadPool* thread_pool_ = nullptr;
  EventTracer* event_tracer_ = nullptr;
  Error (*traced_run_)(Method&) = nullptr;     // set with event_tracer_ (method_tracing.cc)
  uint32_t trace_runs_ = 0;
  bool initialized_ = false;
  Diagnostic diag_;
};
}  // namespace internal

class Method : private internal::MethodData {
 public:
  static constexpr size_t kDelegateNameBytes = 40;
  // `event_tracer` (may be null; must outlive the Method) receives the init events and is
  // attached for execute(); its wants_delegate_ops() decides whether delegates are built
  // with per-operator profiling.
  static Result<Method> init(const Program& program, const schema::Method* method,
                             MemoryManager* memory, Diagnostic* diag,
                             ThreadPool* thread_pool = nullptr);
  // The same with a tracer (method_tracing.cc); a null tracer is the untraced init.
  static Result<Method> init(const Program& program, const schema::Method* method,
                             MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool,
                             EventTracer* event_tracer);
  Method(Method&& other) noexcept;
  Method& operator=(Method&&) = delete;
  Method(const Method&) = delete;
  ~Method();

  MethodMeta meta() const { return MethodMeta(method_); }
  size_t num_inputs() const { return inputs_.num; }
  size_t num_outputs() const { return outputs_.num; }

  // Copies `value` into input `index`'s planned storage. Tensors must match dtype and rank;
  // static dimensions must match exactly, dynamic ones stay within their bounds.
  Error set_input(size_t index, const EValue& value);
  // Zero-copy: input `index` reads `tensor.data` directly (same checks as set_input). The
  // method never writes a bound input unless the program lists it in `mutable_inputs` (the
  // PyTorch model mutated that input in place: execute() then writes the caller's memory,
  // as eager PyTorch would); `ember inspect` marks such inputs.
  Error bind_input(size_t index, const Tensor& tensor);
  // Makes output `index` (a tensor) be written to caller memory of `nbytes` bytes, which
  // must hold the output at its upper-bound size. Pass data = null to return to planned memory.
  Error set_output_buffer(size_t index, void* data, size_t nbytes);
  const EValue& input(size_t index) const;
  const EValue& output(size_t index) const;  // index < num_outputs()

  Error execute();
  // Restores every mutable-state tensor to its initial value from the program, shared ones
  // included (so the other methods using them see the reset too), and the state delegates
  // keep themselves (Backend::reset_state: a KV cache on the GPU).
  Error reset_state();
  // Thread pool for kernels; null runs single-threaded. Must outlive use. Delegates got
  // the pool given at init (they may bind it into their compiled state).
  void set_thread_pool(ThreadPool* pool) { thread_pool_ = pool; }
  // Attaches a tracer for the following execute() calls (null detaches; see
  // event_tracer.h for the cost). Delegates report their operators only if a tracer that
  // wants them was given at init. Must outlive its use; restarts the run count at 0.
  void set_event_tracer(EventTracer* tracer);  // method_tracing.cc
  EventTracer* event_tracer() const { return event_tracer_; }

  // Why the last failing call failed; empty when nothing failed.
  const char* last_error_message() const { return diag_.message; }
  size_t num_values() const { return num_values_; }
  const EValue& value(size_t index) const { return values_[index]; }

 private:
  struct Instruction;
  // Lets the traced init (method_tracing.cc) time each backend's init and hand backends the
  // tracer, without the core init referencing any tracing code. Null for an untraced init.
  using InitObserver = DelegateInitObserver;
  class DelegateInitTimer;  // method_tracing.cc
  class Init;  // the steps of init_with (method.cc)
  Method() = default;
  static Result<Method> init_with(const Program& program, const schema::Method* method,
                                  MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool,
                                  InitObserver* observer);
  static Error run_traced(Method& method);  // execute() with a tracer (method_tracing.cc)
  // What a traced instruction event reports (method_tracing.cc).
  void describe_instruction(size_t pc, TraceEvent* event) const;
  Error check_input_tensor(size_t index, const Tensor& given, Tensor** target);
  // The instruction loop; kTraced selects the variant that times and records every
  // instruction, so the untraced one carries no per-instruction tracing code.
  template <bool kTraced>
  Error run_instructions();  // runtime/executor/instruction_loop.h
  Error instruction_failed(Error err, size_t pc);

  Instruction* instructions_ = nullptr;  // the other data is in MethodData
};

inline Result<Method> Method::init(const Program& program, const schema::Method* method,
                                   MemoryManager* memory, Diagnostic* diag, ThreadPool* thread_pool) {
  return init_with(program, method, memory, diag, thread_pool, nullptr);
}

}  // namespace ember
