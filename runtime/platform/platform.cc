#include "runtime/platform/platform.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace ember {
namespace {

void default_log(LogLevel level, const char* file, int line, const char* message) {
  static const char* kNames[] = {"D", "I", "W", "E", "F"};
  std::fprintf(stderr, "[ember %s %s:%d] %s\n", kNames[static_cast<int>(level) % 5], file, line,
               message);
}

uint64_t default_monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

[[noreturn]] void default_abort() { std::abort(); }

void* default_allocate(size_t bytes, size_t alignment) {
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* ptr = nullptr;
  if (posix_memalign(&ptr, alignment, bytes == 0 ? 1 : bytes) != 0) return nullptr;
  return ptr;
}

void default_deallocate(void* ptr) { std::free(ptr); }

PlatformHooks g_hooks;

}  // namespace

void set_platform_hooks(const PlatformHooks& hooks) { g_hooks = hooks; }

void platform_log(LogLevel level, const char* file, int line, const char* message) {
  (g_hooks.log ? g_hooks.log : default_log)(level, file, line, message);
}

uint64_t platform_monotonic_ns() {
  return (g_hooks.monotonic_ns ? g_hooks.monotonic_ns : default_monotonic_ns)();
}

void platform_abort() {
  if (g_hooks.abort) g_hooks.abort();
  default_abort();
}

void* platform_allocate(size_t bytes, size_t alignment) {
  return (g_hooks.allocate ? g_hooks.allocate : default_allocate)(bytes, alignment);
}

void platform_deallocate(void* ptr) {
  (g_hooks.deallocate ? g_hooks.deallocate : default_deallocate)(ptr);
}

}  // namespace ember
