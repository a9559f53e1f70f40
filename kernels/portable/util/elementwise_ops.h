// Building blocks for elementwise kernels: scalars wrapped as 0-dim tensors, typed scalar
// access, wrapping integer arithmetic, and drivers for unary/binary/ternary ops that handle
// argument checks, broadcasting, promotion and output resizing.
//
// An op is given as a factory: a generic lambda taking a compute-type tag (float, double or
// int64_t) and returning the per-element function for that type, e.g.
//   [](auto tag) { using C = decltype(tag); return [](C x, C y) { return x + y; }; }
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/elementwise.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/promotion.h"
#include "kernels/portable/util/tensor_util.h"

namespace ember {
namespace portable {

// A Scalar EValue as the compute type C.
template <typename C>
inline C scalar_to(const EValue& v) {
  if (v.is_int()) return convert<C>(v.as_int);
  if (v.is_bool()) return convert<C>(v.as_bool);
  if (v.is_double()) return convert<C>(v.as_double);
  return C();
}

// A scalar viewed as a 0-dim tensor (int64, float64 or bool), for broadcasting drivers.
struct ScalarTensor {
  Tensor tensor;
  union {
    int64_t i;
    double d;
    bool b;
  } storage;
  explicit ScalarTensor(const EValue& v) {
    storage.i = 0;
    tensor.rank = 0;
    tensor.data = &storage;
    tensor.capacity_bytes = sizeof(storage);
    if (v.is_double()) {
      tensor.dtype = ScalarType::Float64;
      storage.d = v.as_double;
    } else if (v.is_bool()) {
      tensor.dtype = ScalarType::Bool;
      storage.b = v.as_bool;
    } else {
      tensor.dtype = ScalarType::Int64;
      storage.i = v.is_int() ? v.as_int : 0;
    }
  }
  ScalarTensor(const ScalarTensor&) = delete;
  ScalarTensor& operator=(const ScalarTensor&) = delete;
};

// Integer arithmetic that wraps instead of overflowing (PyTorch's behaviour).
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
// Truncating division; 0 for a zero divisor (PyTorch raises), no trap on INT64_MIN / -1.
inline int64_t safe_div_trunc(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  return a / b;
}
inline int64_t safe_div_floor(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_sub(0, a);
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) --q;
  return q;
}
// Python-style modulo (sign of the divisor).
inline int64_t safe_mod_floor(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t safe_mod_trunc(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  return a % b;
}

template <typename C>
inline C add_op(C a, C b) {
  if constexpr (std::is_integral<C>::value) return wrap_add(a, b); else return a + b;
}
template <typename C>
inline C sub_op(C a, C b) {
  if constexpr (std::is_integral<C>::value) return wrap_sub(a, b); else return a - b;
}
template <typename C>
inline C mul_op(C a, C b) {
  if constexpr (std::is_integral<C>::value) return wrap_mul(a, b); else return a * b;
}

// Floor division for floats with Python semantics.
template <typename C>
inline C float_div_floor(C a, C b) {
  if (b == 0) return a / b;
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  C floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > C(0.5)) floordiv += 1;
  } else {
    floordiv = std::copysign(C(0), a / b);
  }
  return floordiv;
}
template <typename C>
inline C float_mod_floor(C a, C b) {
  C m = std::fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}

// Runs out = f(x, y) with broadcasting. The compute type is that of `compute`; f's return
// type (the compute type or bool) is stored as out's dtype.
template <typename Factory>
Error binary_op(KernelContext& ctx, KernelArgs& a, const Tensor* x, const Tensor* y, Tensor* out,
                ScalarType compute, const Factory& factory) {
  if (!a.ok()) return a.error();
  const Tensor* ins[2] = {x, y};
  if (!resize_broadcast(a, ins, out)) return a.error();
  EMBER_DISPATCH_COMPUTE(compute, C, {
    auto f = factory(C{});
    using R = decltype(f(C{}, C{}));
    map_elementwise<C, R, 2>(ctx, ins, *out, f);
  });
  return Error::Ok;
}

// Runs out = f(x, y, z) with broadcasting (see binary_op).
template <typename Factory>
Error ternary_op(KernelContext& ctx, KernelArgs& a, const Tensor* x, const Tensor* y,
                 const Tensor* z, Tensor* out, ScalarType compute, const Factory& factory) {
  if (!a.ok()) return a.error();
  const Tensor* ins[3] = {x, y, z};
  if (!resize_broadcast(a, ins, out)) return a.error();
  EMBER_DISPATCH_COMPUTE(compute, C, {
    auto f = factory(C{});
    using R = decltype(f(C{}, C{}, C{}));
    map_elementwise<C, R, 3>(ctx, ins, *out, f);
  });
  return Error::Ok;
}

// Runs out = f(x) elementwise.
template <typename Factory>
Error unary_op(KernelContext& ctx, KernelArgs& a, const Tensor* x, Tensor* out, ScalarType compute,
               const Factory& factory) {
  if (!a.ok()) return a.error();
  if (!require_contiguous(a, x) || !resize_like(a, out, *x)) return a.error();
  const Tensor* ins[1] = {x};
  EMBER_DISPATCH_COMPUTE(compute, C, {
    auto f = factory(C{});
    using R = decltype(f(C{}));
    map_elementwise<C, R, 1>(ctx, ins, *out, f);
  });
  return Error::Ok;
}

// Like unary_op but the compute type is float or double only (for transcendental ops):
// integer inputs compute in float.
template <typename Factory>
Error unary_float_op(KernelContext& ctx, KernelArgs& a, const Tensor* x, Tensor* out,
                     const Factory& factory) {
  if (!a.ok()) return a.error();
  if (!require_contiguous(a, x) || !resize_like(a, out, *x)) return a.error();
  const Tensor* ins[1] = {x};
  if (x->dtype == ScalarType::Float64 || out->dtype == ScalarType::Float64) {
    auto f = factory(double{});
    using R = decltype(f(double{}));
    map_elementwise<double, R, 1>(ctx, ins, *out, f);
  } else {
    auto f = factory(float{});
    using R = decltype(f(float{}));
    map_elementwise<float, R, 1>(ctx, ins, *out, f);
  }
  return Error::Ok;
}

// Float compute dtype for `t`: t itself when floating, else float32.
inline ScalarType float_compute(ScalarType t) { return is_floating(t) ? t : ScalarType::Float32; }

}  // namespace portable
}  // namespace ember
