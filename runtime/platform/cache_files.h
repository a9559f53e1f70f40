// POSIX file helpers for the delegates' on-disk caches (XNNPACK's packed weights, Vulkan's
// pipeline cache): used when a cache is opened or saved, never from execute. Not one of the
// replaceable platform hooks (platform.h): a platform without a file system builds without
// these caches.
//
// Threading: safe to call from several threads and processes at once; concurrent writers of
// one path leave one writer's complete file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace ember {

// mkdir -p: creates `dir` and any missing parents with `mode` (existing ones are kept as they
// are). True when `dir` is a directory afterwards.
bool make_directories(const std::string& dir, mode_t mode);

// Writes `first` then `second` (second_size may be 0) to `path` whole: a temporary file with a
// name unique to this process and call, in the same directory, then renamed over `path`
// (atomic on POSIX), so a reader sees the old file, the new one or none, never a part.
// Returns 0, or the errno of the step that failed (the temporary file is removed then).
int write_file_atomically(const std::string& path, const void* first, size_t first_size, const void* second = nullptr,
                          size_t second_size = 0);

}  // namespace ember
