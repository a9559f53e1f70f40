#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"

#include <pthreadpool.h>

namespace ember {

PthreadpoolThreadPool::PthreadpoolThreadPool(size_t threads) : pool_(pthreadpool_create(threads)) {}

PthreadpoolThreadPool::~PthreadpoolThreadPool() {
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
}

void PthreadpoolThreadPool::parallel_for(size_t count, void (*fn)(void*, size_t), void* context) {
  if (pool_ == nullptr || count <= 1) {
    for (size_t i = 0; i < count; ++i) fn(context, i);
    return;
  }
  // One index per task; callers already group work into reasonably sized chunks.
  pthreadpool_parallelize_1d(pool_, fn, context, count, /*flags=*/0);
}

size_t PthreadpoolThreadPool::num_threads() const {
  return pool_ != nullptr ? pthreadpool_get_threads_count(pool_) : 1;
}

}  // namespace ember
