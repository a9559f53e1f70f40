#include "runtime/kernel/kernel_registry.h"

#include <cstring>
#include <new>

namespace ember {
namespace {

// Function-local statics avoid static-initialisation-order problems between registrants.
// The table is raw, zero-initialised storage (.bss): an array of KernelEntry, whose default
// dtype is -1, would be emitted as ~36 KB of initialised .data in every binary.
struct Table {
  alignas(KernelEntry) unsigned char storage[sizeof(KernelEntry) * kMaxKernels];
  size_t count;
  KernelEntry* entries() { return reinterpret_cast<KernelEntry*>(storage); }
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

bool register_kernel(const char* name, KernelFn fn, int dtype) {
  Table& t = table();
  if (name == nullptr || fn == nullptr || t.count >= kMaxKernels) return false;
  for (size_t i = 0; i < t.count; ++i) {
    const KernelEntry& e = t.entries()[i];
    if (e.dtype == dtype && std::strcmp(e.name, name) == 0) return false;
  }
  new (&t.entries()[t.count]) KernelEntry{name, dtype, fn};
  ++t.count;
  return true;
}

KernelFn find_kernel(const char* name, int first_tensor_dtype) {
  Table& t = table();
  KernelFn generic = nullptr;
  for (size_t i = 0; i < t.count; ++i) {
    const KernelEntry& e = t.entries()[i];
    if (std::strcmp(e.name, name) != 0) continue;
    if (e.dtype == kAnyDtype) {
      generic = e.fn;
    } else if (e.dtype == first_tensor_dtype) {
      return e.fn;
    }
  }
  return generic;
}

size_t num_registered_kernels() { return table().count; }
const KernelEntry& registered_kernel(size_t index) { return table().entries()[index]; }

}  // namespace ember
