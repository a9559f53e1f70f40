// Selective kernel registration: a kernel library compiled with
//   -include runtime/kernel/selective_registration.h
// and a generated "ember_selected_ops.h" on its include path (ember_selective_kernels() in
// kernels/portable/selective.bzl does both) registers only the operators listed there.
// The registration macros of kernel_registry.h are redefined to test the literal operator
// name against the list at compile time; an unselected kernel is then never referenced,
// so the linker's section GC (-ffunction-sections, --gc-sections) drops its code.
//
// ember_selected_ops.h defines, in namespace ember::selected_ops:
//   constexpr const char* kDescription;  // where the list came from, for load errors
//   constexpr const char* kNames[];      // "<ns>::<op>.<overload>", ended by nullptr
#pragma once

#include "runtime/kernel/kernel_registry.h"
#include "runtime/kernel/kernel_selection.h"

#include "ember_selected_ops.h"

namespace ember {
namespace selected_ops {

constexpr bool same_name(const char* a, const char* b) {
  while (*a != 0 && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}

constexpr bool is_selected(const char* name) {
  for (const char* const* n = kNames; *n != nullptr; ++n) {
    if (same_name(*n, name)) return true;
  }
  return false;
}

// Tells the runtime this is a selective build (once, however many kernel files include it).
inline const bool kSelectionNoted = ::ember::note_kernel_selection(kDescription);

}  // namespace selected_ops
}  // namespace ember

// `if constexpr` outside a template still discards the unselected branch: the kernel
// function is not odr-used there, so no reference to it is emitted.
#undef EMBER_REGISTER_KERNEL
#undef EMBER_REGISTER_KERNEL_FOR_DTYPE
#define EMBER_REGISTER_KERNEL(name, fn)                                            \
  static const bool EMBER_CONCAT_K(ember_kernel_reg_, __COUNTER__) = []() -> bool { \
    if constexpr (::ember::selected_ops::is_selected(name)) {                       \
      return ::ember::register_kernel(name, fn);                                    \
    } else {                                                                        \
      return false;                                                                 \
    }                                                                               \
  }()
#define EMBER_REGISTER_KERNEL_FOR_DTYPE(name, dtype, fn)                           \
  static const bool EMBER_CONCAT_K(ember_kernel_reg_, __COUNTER__) = []() -> bool { \
    if constexpr (::ember::selected_ops::is_selected(name)) {                       \
      return ::ember::register_kernel(name, fn, static_cast<int>(dtype));           \
    } else {                                                                        \
      return false;                                                                 \
    }                                                                               \
  }()
