// MemoryAllocator: a bump allocator over caller-provided memory. Never touches the heap.
//
// The caller owns the buffer and keeps it alive while anything allocated from it is in use.
// reset() makes all allocations invalid at once. `high_water()` reports the most bytes ever
// used, so an embedder can size the buffer exactly.
// Thread-safety: none; one allocator per Method (kernels take scratch on the executing
// thread before fanning work out to a thread pool). Never share one between concurrent Methods.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/platform/diagnostic.h"

namespace ember {

class MemoryAllocator {
 public:
  MemoryAllocator() = default;
  MemoryAllocator(void* buffer, size_t size) : base_(static_cast<uint8_t*>(buffer)), size_(size) {}

  // Returns aligned memory, or null when it does not fit (see bytes_needed()).
  void* allocate(size_t bytes, size_t alignment = 16) {
    uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
    uintptr_t aligned = (start + alignment - 1) & ~(static_cast<uintptr_t>(alignment) - 1);
    size_t padding = aligned - start;
    size_t needed = padding + bytes;
    // Compare without forming padding + bytes first: a huge `bytes` must not wrap around.
    if (base_ == nullptr || padding > size_ - used_ || bytes > size_ - used_ - padding) {
      failed_bytes_ = (needed < bytes || failed_bytes_ + needed < failed_bytes_) ? SIZE_MAX
                                                                                 : failed_bytes_ + needed;
      last_failure_ = (needed < bytes || used_ + needed < used_) ? SIZE_MAX : used_ + needed;
      return nullptr;
    }
    used_ += needed;
    if (used_ > high_water_) high_water_ = used_;
    return reinterpret_cast<void*>(aligned);
  }

  template <typename T>
  T* allocate_array(size_t count) {
    if (count > SIZE_MAX / sizeof(T)) return nullptr;
    return static_cast<T*>(allocate(count * sizeof(T), alignof(T) < 8 ? 8 : alignof(T)));
  }

  void reset() {
    used_ = 0;
    last_failure_ = 0;
  }
  size_t used() const { return used_; }
  size_t size() const { return size_; }
  size_t high_water() const { return high_water_; }
  // Bytes that would have been needed so far if every request had succeeded.
  size_t bytes_needed() const {
    return failed_bytes_ > SIZE_MAX - high_water_ ? SIZE_MAX : high_water_ + failed_bytes_;
  }
  // Total bytes the last failed request since reset() would have needed (0: none failed).
  size_t last_failure_bytes() const { return last_failure_; }

 private:
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
  size_t used_ = 0;
  size_t high_water_ = 0;
  size_t failed_bytes_ = 0;
  size_t last_failure_ = 0;
};

// The out-of-memory failure of a method's init: "method allocator too small while allocating
// <what>: N bytes given, at least M needed; enlarge the method allocator" (OutOfMemory).
Error method_allocator_too_small(Diagnostic* diag, const MemoryAllocator& allocator, const char* what);

}  // namespace ember
