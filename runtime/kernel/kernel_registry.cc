#include "runtime/kernel/kernel_registry.h"

#include <cstdint>
#include <cstring>
#include <new>

namespace ember {
namespace {

// Function-local statics avoid static-initialisation-order problems between registrants.
// The table is raw, zero-initialised storage (.bss): an array of KernelEntry, whose default
// dtype is -1, would be emitted as ~36 KB of initialised .data in every binary.
// Entries stay in registration order (registered_kernel(i)); `by_key` orders their indices
// by (name, dtype), so a lookup is a binary search: ~10 name comparisons instead of one per
// registered kernel (740 with the portable kernels) for every instruction a method loads.
struct Table {
  alignas(KernelEntry) unsigned char storage[sizeof(KernelEntry) * kMaxKernels];
  uint16_t by_key[kMaxKernels];
  size_t count;
  KernelEntry* entries() { return reinterpret_cast<KernelEntry*>(storage); }
  const KernelEntry& sorted(size_t i) { return entries()[by_key[i]]; }
};
static_assert(kMaxKernels <= 65536, "Table::by_key holds 16-bit indices");

Table& table() {
  static Table t;
  return t;
}

// (name, dtype) order; kAnyDtype (-1) sorts before every dtype of the same name.
int compare(const KernelEntry& e, const char* name, int dtype) {
  const int c = std::strcmp(e.name, name);
  if (c != 0) return c;
  return e.dtype < dtype ? -1 : (e.dtype > dtype ? 1 : 0);
}

// The first position of t.by_key whose entry is not below (name, dtype).
size_t lower_bound(Table& t, const char* name, int dtype) {
  size_t lo = 0, hi = t.count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (compare(t.sorted(mid), name, dtype) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

bool register_kernel(const char* name, KernelFn fn, int dtype) {
  Table& t = table();
  if (name == nullptr || fn == nullptr || t.count >= kMaxKernels) return false;
  const size_t at = lower_bound(t, name, dtype);
  if (at < t.count && compare(t.sorted(at), name, dtype) == 0) return false;
  new (&t.entries()[t.count]) KernelEntry{name, dtype, fn};
  std::memmove(&t.by_key[at + 1], &t.by_key[at], (t.count - at) * sizeof(t.by_key[0]));
  t.by_key[at] = static_cast<uint16_t>(t.count);
  ++t.count;
  return true;
}

KernelFn find_kernel(const char* name, int first_tensor_dtype) {
  if (name == nullptr) return nullptr;
  Table& t = table();
  // The generic entry (kAnyDtype) comes first among `name`'s, then one per specialised dtype.
  const size_t first = lower_bound(t, name, kAnyDtype);
  KernelFn generic = nullptr;
  for (size_t i = first; i < t.count && std::strcmp(t.sorted(i).name, name) == 0; ++i) {
    const KernelEntry& e = t.sorted(i);
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
