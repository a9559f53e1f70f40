#include "runtime/kernel/kernel_registry.h"

#include <cstring>

namespace ember {
namespace {

// Function-local statics avoid static-initialisation-order problems between registrants.
struct Table {
  KernelEntry entries[kMaxKernels];
  size_t count = 0;
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
    if (t.entries[i].dtype == dtype && std::strcmp(t.entries[i].name, name) == 0) return false;
  }
  t.entries[t.count++] = KernelEntry{name, dtype, fn};
  return true;
}

KernelFn find_kernel(const char* name, int first_tensor_dtype) {
  const Table& t = table();
  KernelFn generic = nullptr;
  for (size_t i = 0; i < t.count; ++i) {
    if (std::strcmp(t.entries[i].name, name) != 0) continue;
    if (t.entries[i].dtype == kAnyDtype) {
      generic = t.entries[i].fn;
    } else if (t.entries[i].dtype == first_tensor_dtype) {
      return t.entries[i].fn;
    }
  }
  return generic;
}

size_t num_registered_kernels() { return table().count; }
const KernelEntry& registered_kernel(size_t index) { return table().entries[index]; }

}  // namespace ember
