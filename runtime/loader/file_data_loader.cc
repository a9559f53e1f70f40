#include "runtime/loader/file_data_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/platform/platform.h"

namespace ember {

Result<FileDataLoader> FileDataLoader::open(const char* path) {
  if (path == nullptr) return Error::InvalidArgument;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error::AccessFailed;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Error::AccessFailed;
  }
  return FileDataLoader(fd, static_cast<size_t>(st.st_size));
}

FileDataLoader::FileDataLoader(FileDataLoader&& other) noexcept
    : fd_(other.fd_), file_size_(other.file_size_) {
  other.fd_ = -1;
}

FileDataLoader::~FileDataLoader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<FreeableBuffer> FileDataLoader::load(size_t offset, size_t size) {
  if (offset > file_size_ || size > file_size_ - offset) return Error::InvalidProgram;
  void* buffer = platform_allocate(size, 64);
  if (buffer == nullptr) return Error::OutOfMemory;
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, static_cast<char*>(buffer) + done, size - done,
                        static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      platform_deallocate(buffer);
      return Error::AccessFailed;
    }
    done += static_cast<size_t>(n);
  }
  return FreeableBuffer(buffer, size,
                        [](void*, const void* data, size_t) {
                          platform_deallocate(const_cast<void*>(data));
                        },
                        nullptr);
}

}  // namespace ember
