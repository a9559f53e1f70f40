// FileDataLoader: reads ranges of a file into memory from platform_allocate (load time only).
// Owns the file descriptor; closes it on destruction. Buffers returned by load() are
// independent of the loader's lifetime.
#pragma once

#include "runtime/loader/data_loader.h"

namespace ember {

class FileDataLoader final : public DataLoader {
 public:
  // Opens `path`; AccessFailed when it cannot be opened or sized.
  static Result<FileDataLoader> open(const char* path);
  FileDataLoader(FileDataLoader&& other) noexcept;
  FileDataLoader& operator=(FileDataLoader&&) = delete;
  ~FileDataLoader() override;

  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  Result<size_t> size() const override { return file_size_; }

 private:
  FileDataLoader(int fd, size_t file_size) : fd_(fd), file_size_(file_size) {}
  int fd_ = -1;
  size_t file_size_ = 0;
};

}  // namespace ember
