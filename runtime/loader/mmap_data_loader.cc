#include "runtime/loader/mmap_data_loader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ember {

Result<MmapDataLoader> MmapDataLoader::open(const char* path, Lock lock) {
  if (path == nullptr) return Error::InvalidArgument;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::AccessFailed;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    ::close(fd);
    return Error::AccessFailed;
  }
  size_t size = static_cast<size_t>(st.st_size);
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file referenced
  if (base == MAP_FAILED) return Error::AccessFailed;
  bool locked = false;
  if (lock != Lock::None) {
    if (mlock(base, size) == 0) {
      locked = true;
    } else if (lock == Lock::Mlock) {
      munmap(base, size);
      return Error::AccessFailed;
    }
  }
  return MmapDataLoader(base, size, locked);
}

MmapDataLoader::MmapDataLoader(MmapDataLoader&& other) noexcept
    : base_(other.base_), size_(other.size_), locked_(other.locked_) {
  other.base_ = nullptr;
  other.size_ = 0;
}

MmapDataLoader::~MmapDataLoader() {
  if (base_ != nullptr) {
    if (locked_) munlock(base_, size_);
    munmap(base_, size_);
  }
}

Result<FreeableBuffer> MmapDataLoader::load(size_t offset, size_t size) {
  if (offset > size_ || size > size_ - offset) return Error::InvalidProgram;
  return FreeableBuffer(static_cast<const char*>(base_) + offset, size, nullptr, nullptr);
}

}  // namespace ember
