// Internal to the runtime: how Method init (//runtime/executor) initialises the delegates of
// a method. The per-delegate work (find the backend, read the blob and compile specs, call
// Backend::init) lives here and is reached only through a pointer that register_backend()
// sets, so a binary that registers no backend links none of it: there, every delegate fails
// as "not linked into this binary", exactly as find_backend() finding no backend would.
#pragma once

#include <cstddef>

#include "runtime/backend/backend.h"
#include "runtime/core/error.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace schema {
struct Method;
}

// Lets a traced init (runtime/executor/method_tracing.cc) time each backend's init and hand
// backends the tracer.
class DelegateInitObserver {
 public:
  virtual EventTracer* delegate_tracer() = 0;  // for BackendInitContext::event_tracer
  virtual void delegate_init(size_t index, bool done) = 0;  // before / after backend init
 protected:
  ~DelegateInitObserver() = default;
};

struct DelegateInitRequest {
  const Program* program;
  const schema::Method* method;      // has at least one delegate
  MemoryAllocator* allocator;        // the method allocator
  ThreadPool* thread_pool;
  Diagnostic* diag;
  DelegateInitObserver* observer;    // null for an untraced init
  char* names;                       // receives "<backend>#<index>", name_bytes each
  size_t name_bytes;
  Backend** backends;                // receive each initialised delegate's backend and handle
  void** handles;
};

// Initialises every delegate of request.method in order, stopping at the first failure.
Error init_delegates(const DelegateInitRequest& request);

// Makes init_delegates() use the registered backends (register_backend() calls it).
void enable_delegate_init();

}  // namespace ember
