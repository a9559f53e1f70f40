// MmapDataLoader: maps the whole file read-only once; load() returns in-place views, so
// weights are used where they lie in the page cache. Optionally mlock()s the mapping so
// inference never page-faults. The loader must outlive every buffer it returned.
#pragma once

#include "runtime/loader/data_loader.h"

namespace ember {

class MmapDataLoader final : public DataLoader {
 public:
  enum class Lock { None, Mlock, MlockIgnoreErrors };
  static Result<MmapDataLoader> open(const char* path, Lock lock = Lock::None);
  MmapDataLoader(MmapDataLoader&& other) noexcept;
  MmapDataLoader& operator=(MmapDataLoader&&) = delete;
  ~MmapDataLoader() override;

  Result<FreeableBuffer> load(size_t offset, size_t size) override;
  Result<size_t> size() const override { return size_; }

 private:
  MmapDataLoader(void* base, size_t size, bool locked) : base_(base), size_(size), locked_(locked) {}
  void* base_ = nullptr;
  size_t size_ = 0;
  bool locked_ = false;
};

}  // namespace ember
