#include "extension/threadpool/thread_pool_factory.h"

#include <sched.h>

#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"

namespace ember {

std::unique_ptr<ThreadPool> create_thread_pool(size_t threads) {
  std::unique_ptr<ThreadPool> pool(new PthreadpoolThreadPool(threads));
  if (pool->num_threads() != threads) return nullptr;  // creation failed
  return pool;
}

size_t available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<size_t>(n) : 1;
}

}  // namespace ember
