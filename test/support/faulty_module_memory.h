// A ModuleMemory (extension/module/module.h) whose allocation number `fail_at` (0-based, since
// construction or the last fail_at()) returns null, and that counts its live blocks: a test
// makes each of a Module's buffer allocations fail in turn and checks that the Module reports
// OutOfMemory, recovers once memory is back, and gives every block back (live() == 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "extension/module/module.h"

namespace ember {
namespace testing {

class FaultyModuleMemory final : public ModuleMemory {
 public:
  explicit FaultyModuleMemory(size_t fail_at = SIZE_MAX) : fail_at_(fail_at) {}
  void* allocate(size_t bytes, size_t alignment) override {
    if (calls_++ == fail_at_) return nullptr;
    void* p = nullptr;
    if (posix_memalign(&p, alignment, bytes) != 0) return nullptr;
    live_++;
    return p;
  }
  void deallocate(void* block) override {
    live_--;
    std::free(block);
  }
  // Fails allocation `n` from now on (SIZE_MAX: none).
  void fail_at(size_t n) {
    fail_at_ = n;
    calls_ = 0;
  }
  size_t calls() const { return calls_; }
  size_t live() const { return live_; }

 private:
  size_t fail_at_;
  size_t calls_ = 0;
  size_t live_ = 0;
};

}  // namespace testing
}  // namespace ember
