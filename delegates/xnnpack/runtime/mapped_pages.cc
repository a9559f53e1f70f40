#include "delegates/xnnpack/runtime/mapped_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace ember {
namespace xnnpack {

bool is_read_only_file_mapping(const void* data, size_t size) {
#if defined(__linux__)
  if (data == nullptr || size == 0) return false;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + size;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  bool ok = false;
  char line[512];
  while (std::fgets(line, sizeof(line), maps) != nullptr) {
    unsigned long lo = 0, hi = 0, inode = 0;
    char perms[8] = {0};
    // "lo-hi perms offset dev inode path"
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &inode) != 4) continue;
    if (begin < lo || begin >= hi) continue;
    ok = end <= hi && inode != 0 && perms[0] == 'r' && perms[1] == '-';
    break;
  }
  std::fclose(maps);
  return ok;
#else
  (void)data;
  (void)size;
  return false;
#endif
}

void drop_whole_pages(const void* data, size_t size) {
#if defined(__linux__)
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0 || data == nullptr) return;
  const uintptr_t p = static_cast<uintptr_t>(page);
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + p - 1) / p * p;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) / p * p;
  if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
  (void)data;
  (void)size;
#endif
}

}  // namespace xnnpack
}  // namespace ember
