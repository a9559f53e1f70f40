// Internal to //extension/module (module.cc, bundled.cc): the guard every public Module call
// takes, so that a call from a second thread while one is running returns InvalidState at once
// instead of racing on the methods' memory (module.h, "Thread-safety").
#pragma once

#include <atomic>
#include <thread>

#include "extension/module/module.h"

namespace ember {

// Calls nested inside a call of the owning thread (execute -> load_method -> load) pass.
class Module::CallGuard {
 public:
  explicit CallGuard(const Module* module) : module_(module) {
    const std::thread::id self = std::this_thread::get_id();
    std::thread::id none;
    if (module->caller_.compare_exchange_strong(none, self, std::memory_order_acquire)) {
      owner_ = true;
      ok_ = true;
    } else {
      ok_ = none == self;  // a call nested inside one of this thread's
    }
  }
  ~CallGuard() {
    if (owner_) module_->caller_.store(std::thread::id(), std::memory_order_release);
  }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;
  bool ok() const { return ok_; }
  static Status busy() {
    return Status(Error::InvalidState,
                  "this Module is running a call on another thread; a Module runs one call at a time: "
                  "serialise the calls (a mutex), or give each thread its own Module (they may share the "
                  "program file and its data files)");
  }

 private:
  const Module* module_;
  bool owner_ = false;
  bool ok_ = false;
};

#define EMBER_ONE_CALL_AT_A_TIME()      \
  CallGuard call_guard_(this);          \
  if (!call_guard_.ok()) return CallGuard::busy()

}  // namespace ember
