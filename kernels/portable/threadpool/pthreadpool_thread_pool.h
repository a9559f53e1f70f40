// An ember::ThreadPool over pthreadpool (the library XNNPACK uses). Independent of the rest
// of the runtime: embedders that want parallel portable kernels create one and put it in
// the KernelContext (or the method's execution options).
//
// Lifetime: construct before execution, destroy after the last kernel call that uses it.
// Construction creates the worker threads (heap + thread creation, so not during execute);
// parallel_for does not allocate. parallel_for is not reentrant: a task must not call
// parallel_for on the same pool.
#pragma once

#include <cstddef>

#include "runtime/kernel/kernel_context.h"

struct pthreadpool;

namespace ember {

class PthreadpoolThreadPool final : public ThreadPool {
 public:
  // threads == 0 uses one thread per logical processor. If the pool cannot be created,
  // parallel_for runs tasks on the calling thread and num_threads() is 1.
  explicit PthreadpoolThreadPool(size_t threads);
  ~PthreadpoolThreadPool() override;
  PthreadpoolThreadPool(const PthreadpoolThreadPool&) = delete;
  PthreadpoolThreadPool& operator=(const PthreadpoolThreadPool&) = delete;

  void parallel_for(size_t count, void (*fn)(void* context, size_t index), void* context) override;
  size_t num_threads() const override;
  void* native_handle() override { return pool_; }  // pthreadpool_t

 private:
  pthreadpool* pool_ = nullptr;
};

}  // namespace ember
