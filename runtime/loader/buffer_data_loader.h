// BufferDataLoader: zero-copy loading from caller memory that outlives the Program.
// For segments to be usable in place the buffer should be 64-byte aligned.
#pragma once

#include "runtime/loader/data_loader.h"

namespace ember {

class BufferDataLoader final : public DataLoader {
 public:
  BufferDataLoader(const void* data, size_t size) : data_(data), size_(size) {}
  Result<FreeableBuffer> load(size_t offset, size_t size) override {
    if (offset > size_ || size > size_ - offset) return Error::InvalidProgram;
    return FreeableBuffer(static_cast<const char*>(data_) + offset, size, nullptr, nullptr);
  }
  Result<size_t> size() const override { return size_; }

 private:
  const void* data_;
  size_t size_;
};

}  // namespace ember
