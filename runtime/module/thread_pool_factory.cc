#include "runtime/module/thread_pool_factory.h"

#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"

namespace ember {

std::unique_ptr<ThreadPool> create_thread_pool(size_t threads) {
  std::unique_ptr<ThreadPool> pool(new PthreadpoolThreadPool(threads));
  if (pool->num_threads() != threads) return nullptr;  // creation failed
  return pool;
}

}  // namespace ember
