// Creates the CPU thread pool used by kernels and delegates (pthreadpool-backed).
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/kernel/kernel_context.h"

namespace ember {

// A pool of `threads` workers (the caller counts as one); null on failure.
std::unique_ptr<ThreadPool> create_thread_pool(size_t threads);

// CPUs this process may run on (its affinity mask; at least 1). More workers than that only
// spin against each other: pthreadpool's workers busy-wait before they sleep, and a waiting
// thread on an oversubscribed core burns the slice the working one needs (measured: MobileNetV2
// pinned to one core, 2 threads 516 ms vs 1 thread 18.5 ms).
size_t available_cpus();

}  // namespace ember
