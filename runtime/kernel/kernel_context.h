// KernelContext: what a kernel may use while it runs: scratch memory, a thread pool and a
// place to explain a failure. Owned by the executing Method; valid during one kernel call.
#pragma once

#include <cstddef>

#include "runtime/core/error.h"
#include "runtime/memory/memory_allocator.h"
#include "runtime/platform/diagnostic.h"

namespace ember {

// Runs fn(context, i) for i in [0, count), possibly in parallel; returns when all are done.
// Implementations must not allocate per call (see runtime/threadpool). Thread-safety: a
// pool handed to several Methods that execute concurrently must accept concurrent
// parallel_for() calls (or give each Method its own pool, as Module does).
class ThreadPool {
 public:
  virtual ~ThreadPool() = default;
  virtual void parallel_for(size_t count, void (*fn)(void* context, size_t index), void* context) = 0;
  virtual size_t num_threads() const = 0;
  // The underlying pool for libraries that take one directly (a pthreadpool_t for the
  // pthreadpool-backed pool, e.g. for XNNPACK); null when there is none.
  virtual void* native_handle() { return nullptr; }
};

struct KernelContext {
  MemoryAllocator* temp = nullptr;   // scratch, reset after the instruction; may be null
  ThreadPool* thread_pool = nullptr; // may be null: run serially
  Diagnostic* diag = nullptr;
  const char* op_name = "";

  void* allocate_temp(size_t bytes, size_t alignment = 64) {
    return temp != nullptr ? temp->allocate(bytes, alignment) : nullptr;
  }
  size_t num_threads() const { return thread_pool ? thread_pool->num_threads() : 1; }
  void parallel_for(size_t count, void (*fn)(void*, size_t), void* context) {
    if (thread_pool != nullptr && count > 1) {
      thread_pool->parallel_for(count, fn, context);
    } else {
      for (size_t i = 0; i < count; ++i) fn(context, i);
    }
  }
  // Records why the kernel failed (message prefixed with the op name) and returns `error`.
  Error fail(Error error, const char* message) {
    ember::fail(diag, error, "%s: %s", op_name, message);
    return error;
  }
};

}  // namespace ember
