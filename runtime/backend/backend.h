// The delegate (backend) interface. A backend takes a preprocessed blob at method init and
// runs it as one instruction. Backends register under an id ("xnnpack", "vulkan", ...) and
// must outlive every Method that uses them (usually static objects).
//
// Thread-safety: init/destroy are called from the thread that loads the method; execute
// from the thread that executes it. A backend shared by several methods must keep its
// per-delegate state in the handle it returns from init: Methods on different threads may
// call init/execute/destroy of one backend concurrently (guard any state shared between
// handles). register_backend() is not thread-safe: register at static-initialisation time
// (or before any program loads); find_backend() may then be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"
#include "runtime/core/event_tracer.h"
#include "runtime/kernel/kernel_context.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/platform/diagnostic.h"

namespace ember {

class Program;

struct CompileSpecView {
  const char* key;
  Span<const uint8_t> value;
};

struct BackendInitContext {
  MemoryAllocator* method_allocator;  // lives as long as the method
  const Program* program;             // read other segments (e.g. weights) in place
  ThreadPool* thread_pool;            // may be null
  Diagnostic* diag;
  // Non-null when the method is loaded with a tracer that wants delegate operators: the
  // backend may then build profiling into its state and report operators at execute.
  EventTracer* event_tracer = nullptr;
};

struct BackendExecuteContext {
  MemoryAllocator* temp;
  ThreadPool* thread_pool;
  Diagnostic* diag;
  // Non-null while a tracer is attached: a backend that can time its operators records one
  // TraceEventKind::DelegateOp event each (kind, run, instruction, delegate_index as given here),
  // within the call's interval. Null costs nothing; never allocate to report.
  EventTracer* event_tracer = nullptr;
  uint32_t run = 0;          // the tracer's execute() number
  uint32_t instruction = 0;  // index of this delegate call in the method
  uint32_t delegate_index = 0;
  const char* debug_name = "";  // the call's debug name (see TraceEvent)
};

// A delegate blob's address is a multiple of this (its FlatBuffer's 8-byte scalars read in
// place): data segments are 64-byte aligned, and an inline blob that is not is refused at init.
constexpr size_t kDelegateBlobAlignment = 8;

class Backend {
 public:
  virtual ~Backend() = default;
  // False when the hardware or driver this backend needs is missing.
  virtual bool is_available() const = 0;
  // Why is_available() is false, for the load error (e.g. "no Vulkan driver: ..."): a
  // static or backend-owned string, never null; empty when there is nothing to add.
  virtual const char* unavailable_reason() const { return ""; }
  // Builds executable state from `blob` (valid while the Program lives, kDelegateBlobAlignment
  // aligned). Returns an opaque
  // handle passed back to execute/destroy.
  virtual Result<void*> init(BackendInitContext& context, Span<const uint8_t> blob,
                             Span<const CompileSpecView> compile_specs) = 0;
  // `args`: the delegate call's inputs then outputs, as the partitioner ordered them.
  virtual Error execute(BackendExecuteContext& context, void* handle, EValue** args,
                        size_t num_args) = 0;
  // Method::reset_state(): a backend that keeps a method's mutable state itself (a KV cache on
  // the GPU) restores its initial value here. Default: nothing kept, nothing to do.
  virtual Error reset_state(void* handle, Diagnostic* diag) { return Error::Ok; }
  // Releases the handle's resources. Called once per successful init.
  virtual void destroy(void* handle) = 0;
};

// Compile spec written by the exporter when a delegate reads weights from the program's
// data segments: one little-endian uint32 program segment index per constant slot.
constexpr const char* kConstantSegmentsSpec = "ember.constant_segments";

// The bytes of constant slot `slot` of a delegate (see kConstantSegmentsSpec), read in
// place from the program. InvalidProgram when the spec or the segment is missing.
Result<Span<const uint8_t>> delegate_constant(const BackendInitContext& context,
                                              Span<const CompileSpecView> compile_specs,
                                              uint32_t slot);

constexpr size_t kMaxBackends = 16;

// Registers `backend` under `id` (static string); false when full or the id is taken.
bool register_backend(const char* id, Backend* backend);
Backend* find_backend(const char* id);
size_t num_registered_backends();
const char* registered_backend_id(size_t index);

}  // namespace ember
