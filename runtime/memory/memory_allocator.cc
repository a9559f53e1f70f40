#include "runtime/memory/memory_allocator.h"

namespace ember {

Error method_allocator_too_small(Diagnostic* diag, const MemoryAllocator& allocator, const char* what) {
  return fail(diag, Error::OutOfMemory,
              "method allocator too small while allocating %s: %zu bytes given, at least %zu "
              "needed; enlarge the method allocator",
              what, allocator.size(), allocator.bytes_needed());
}

}  // namespace ember
