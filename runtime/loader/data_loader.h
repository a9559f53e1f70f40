// DataLoader: where program bytes come from (a caller buffer, a file, a memory map).
//
// load() returns a FreeableBuffer that stays valid until it is freed (or destroyed); the
// Program keeps the buffers it needs for its whole life.
//
// Thread-safety: the loaders here (buffer, file via pread, mmap) keep no mutable state after
// opening, so concurrent load()/size() calls on one loader are safe; Program::load only
// calls them while loading. A custom DataLoader shared by threads must be safe likewise.
#pragma once

#include <cstddef>

#include "runtime/core/result.h"

namespace ember {

class FreeableBuffer {
 public:
  using FreeFn = void (*)(void* context, const void* data, size_t size);
  FreeableBuffer() = default;
  FreeableBuffer(const void* data, size_t size, FreeFn free_fn, void* context)
      : data_(data), size_(size), free_fn_(free_fn), context_(context) {}
  FreeableBuffer(FreeableBuffer&& other) noexcept
      : data_(other.data_), size_(other.size_), free_fn_(other.free_fn_), context_(other.context_) {
    other.data_ = nullptr;
    other.size_ = 0;
    other.free_fn_ = nullptr;
  }
  FreeableBuffer& operator=(FreeableBuffer&& other) noexcept {
    if (this != &other) {
      free();
      data_ = other.data_;
      size_ = other.size_;
      free_fn_ = other.free_fn_;
      context_ = other.context_;
      other.data_ = nullptr;
      other.size_ = 0;
      other.free_fn_ = nullptr;
    }
    return *this;
  }
  FreeableBuffer(const FreeableBuffer&) = delete;
  FreeableBuffer& operator=(const FreeableBuffer&) = delete;
  ~FreeableBuffer() { free(); }

  void free() {
    if (free_fn_ != nullptr) free_fn_(context_, data_, size_);
    free_fn_ = nullptr;
    data_ = nullptr;
    size_ = 0;
  }
  const void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const void* data_ = nullptr;
  size_t size_ = 0;
  FreeFn free_fn_ = nullptr;
  void* context_ = nullptr;
};

class DataLoader {
 public:
  virtual ~DataLoader() = default;
  // Loads `size` bytes at `offset`. The returned memory is aligned to at least 64 bytes
  // relative to the file start (buffer and mmap loaders return in-place pointers).
  virtual Result<FreeableBuffer> load(size_t offset, size_t size) = 0;
  virtual Result<size_t> size() const = 0;
};

}  // namespace ember
