// The C++ kernel of the custom operator ember_example::scaled_tanh (make_model.py defines it
// in Python with torch.library): out = tanh(x) * scale + shift, float32.
//
// A kernel receives the operator's arguments in schema order, every default filled in by the
// exporter, then its preallocated output: here x, scale, shift, out. It must check what it
// relies on and fail with a message (ctx.fail) rather than trust the program; it must not
// allocate (scratch memory comes from ctx.allocate_temp) and must be reentrant.
#include <cmath>

#include "runtime/kernel/kernel_registry.h"

namespace {

ember::Error scaled_tanh(ember::KernelContext& ctx, ember::EValue** args, size_t num_args) {
  if (num_args != 4 || !args[0]->is_tensor() || !args[1]->is_double() || !args[2]->is_double() ||
      !args[3]->is_tensor()) {
    return ctx.fail(ember::Error::InvalidArgument, "expected (Tensor x, float scale, float shift, Tensor out)");
  }
  const ember::Tensor& x = *args[0]->as_tensor;
  ember::Tensor& out = *args[3]->as_tensor;
  if (x.dtype != ember::ScalarType::Float32 || out.dtype != ember::ScalarType::Float32) {
    return ctx.fail(ember::Error::InvalidArgument, "only float32 tensors are supported");
  }
  if (!x.is_contiguous()) return ctx.fail(ember::Error::InvalidArgument, "x must be contiguous");
  // The output takes x's shape (x's sizes can change per call in a dynamic-shape program).
  ember::Error e = ember::resize_tensor(out, ember::Span<const int64_t>(x.sizes, x.rank));
  if (e != ember::Error::Ok) return ctx.fail(e, "the output cannot take the input's shape");
  const float scale = static_cast<float>(args[1]->as_double), shift = static_cast<float>(args[2]->as_double);
  const float* in = x.data_as<float>();
  float* o = out.data_as<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) o[i] = std::tanh(in[i]) * scale + shift;
  return ember::Error::Ok;
}

}  // namespace

// The name is the operator's as the exporter writes it: "<namespace>::<name>.<overload>".
EMBER_REGISTER_KERNEL("ember_example::scaled_tanh.default", scaled_tanh);
