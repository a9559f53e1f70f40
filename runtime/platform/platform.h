// The platform layer: everything the runtime needs from the OS, replaceable by an embedder.
//
// Call set_platform_hooks() once before loading programs (not thread-safe against
// concurrent runtime use). Any hook left null keeps the default (stderr, clock_gettime,
// std::abort, malloc/free). The runtime allocates through `allocate` only while loading
// (file reads); never while executing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

enum class LogLevel : uint8_t { Debug = 0, Info = 1, Warning = 2, Error = 3, Fatal = 4 };

struct PlatformHooks {
  void (*log)(LogLevel level, const char* file, int line, const char* message) = nullptr;
  uint64_t (*monotonic_ns)() = nullptr;
  void (*abort)() = nullptr;  // must not return (platform_abort() aborts if it does)
  void* (*allocate)(size_t bytes, size_t alignment) = nullptr;
  void (*deallocate)(void* ptr) = nullptr;
};

void set_platform_hooks(const PlatformHooks& hooks);

void platform_log(LogLevel level, const char* file, int line, const char* message);
uint64_t platform_monotonic_ns();
[[noreturn]] void platform_abort();
// Returns null on failure. `alignment` is a power of two <= 4096.
void* platform_allocate(size_t bytes, size_t alignment);
void platform_deallocate(void* ptr);

}  // namespace ember
