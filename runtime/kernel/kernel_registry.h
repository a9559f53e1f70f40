// The operator registry: kernels register statically under "<namespace>::<op>.<overload>"
// (e.g. "aten::add.Tensor", "aten::relu.default"), optionally specialised for the dtype of
// the first tensor argument. Methods resolve every operator once at init into a function
// pointer; execute never looks anything up.
//
// Thread-safety: register_kernel() is not thread-safe; kernels register during static
// initialisation (EMBER_REGISTER_KERNEL) or before any method loads. After that the table
// is read-only and find_kernel() may be called from any thread. A kernel must be reentrant:
// Methods on different threads call it concurrently with their own arguments (no mutable
// globals; scratch comes from ctx.allocate_temp()).
//
// Kernel calling convention: `args` holds the op's schema arguments in schema order
// (defaults filled in by the exporter), followed by its outputs (out-variants: outputs are
// preallocated; a kernel resizes them within capacity with resize_tensor()).
#pragma once

#include <cstddef>

#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/kernel/kernel_context.h"

namespace ember {

using KernelFn = Error (*)(KernelContext& ctx, EValue** args, size_t num_args);

constexpr size_t kMaxKernels = 1536;
constexpr int kAnyDtype = -1;

struct KernelEntry {
  const char* name = nullptr;  // static string
  int dtype = kAnyDtype;       // ScalarType of the first tensor argument, or kAnyDtype
  KernelFn fn = nullptr;
};

// Registers a kernel; returns false when the table is full or the (name, dtype) key exists.
bool register_kernel(const char* name, KernelFn fn, int dtype = kAnyDtype);
// The best kernel for `name` given the first tensor argument's dtype, or null.
KernelFn find_kernel(const char* name, int first_tensor_dtype = kAnyDtype);
size_t num_registered_kernels();
const KernelEntry& registered_kernel(size_t index);

}  // namespace ember

// Static registration at load time of the kernel library (link it with alwayslink = 1).
// A selective build (runtime/kernel/selective_registration.h) redefines these two macros to
// register only listed operators: register kernels through them, with a literal name.
#define EMBER_REGISTER_KERNEL(name, fn) \
  static const bool EMBER_CONCAT_K(ember_kernel_reg_, __COUNTER__) = ::ember::register_kernel(name, fn)
#define EMBER_REGISTER_KERNEL_FOR_DTYPE(name, dtype, fn)              \
  static const bool EMBER_CONCAT_K(ember_kernel_reg_, __COUNTER__) = \
      ::ember::register_kernel(name, fn, static_cast<int>(dtype))
#define EMBER_CONCAT_K_INNER(a, b) a##b
#define EMBER_CONCAT_K(a, b) EMBER_CONCAT_K_INNER(a, b)
