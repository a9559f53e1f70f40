// Creates the CPU thread pool used by kernels and delegates (pthreadpool-backed).
#pragma once

#include <cstddef>
#include <memory>

#include "runtime/kernel/kernel_context.h"

namespace ember {

// A pool of `threads` workers (the caller counts as one); null on failure.
std::unique_ptr<ThreadPool> create_thread_pool(size_t threads);

}  // namespace ember
