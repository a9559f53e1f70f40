#include "test/support/allocation_counter.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
volatile uint64_t g_allocations = 0;
}  // namespace

extern "C" {
void* __real_malloc(size_t size);
void* __real_calloc(size_t n, size_t size);
void* __real_realloc(void* p, size_t size);
int __real_posix_memalign(void** p, size_t alignment, size_t size);
void* __real_aligned_alloc(size_t alignment, size_t size);

void* __wrap_malloc(size_t size) {
  g_allocations = g_allocations + 1;
  return __real_malloc(size);
}
void* __wrap_calloc(size_t n, size_t size) {
  g_allocations = g_allocations + 1;
  return __real_calloc(n, size);
}
void* __wrap_realloc(void* p, size_t size) {
  g_allocations = g_allocations + 1;
  return __real_realloc(p, size);
}
int __wrap_posix_memalign(void** p, size_t alignment, size_t size) {
  g_allocations = g_allocations + 1;
  return __real_posix_memalign(p, alignment, size);
}
void* __wrap_aligned_alloc(size_t alignment, size_t size) {
  g_allocations = g_allocations + 1;
  return __real_aligned_alloc(alignment, size);
}
}

void* operator new(size_t size) {
  g_allocations = g_allocations + 1;
  void* p = __real_malloc(size == 0 ? 1 : size);
  if (p == nullptr) std::abort();
  return p;
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  g_allocations = g_allocations + 1;
  return __real_malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void* operator new(size_t size, std::align_val_t align) {
  g_allocations = g_allocations + 1;
  void* p = nullptr;
  size_t a = static_cast<size_t>(align) < sizeof(void*) ? sizeof(void*) : static_cast<size_t>(align);
  if (__real_posix_memalign(&p, a, size == 0 ? 1 : size) != 0) std::abort();
  return p;
}
void* operator new[](size_t size, std::align_val_t align) { return operator new(size, align); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }


namespace ember {
namespace testing {
uint64_t allocation_count() { return g_allocations; }
void count_allocation() { g_allocations = g_allocations + 1; }
}  // namespace testing
}  // namespace ember
