// Entry point shared by binary kernels whose two operands may each be a Tensor or a Scalar
// (the .Tensor and .Scalar overloads share one implementation).
#pragma once

#include "kernels/portable/util/elementwise_ops.h"

namespace ember {
namespace portable {

// A binary operand: the tensor itself or a scalar wrapped as a 0-dim tensor.
class Operand {
 public:
  explicit Operand(const EValue& v)
      : scalar_(v),
        tensor_(v.is_tensor() ? v.as_tensor : &scalar_.tensor),
        is_scalar_(!v.is_tensor()),
        valid_(v.is_tensor() ? v.as_tensor != nullptr : (v.is_int() || v.is_double() || v.is_bool())),
        value_(v) {}
  const Tensor* tensor() const { return tensor_; }
  bool valid() const { return valid_; }
  bool is_scalar() const { return is_scalar_; }
  void add_to(ResultType& r) const {
    if (is_scalar_) r.add_scalar(value_); else r.add_tensor(*tensor_);
  }

 private:
  ScalarTensor scalar_;
  const Tensor* tensor_;
  bool is_scalar_;
  bool valid_;
  const EValue& value_;
};

enum class Promote : uint8_t {
  Common,  // compute in the promoted dtype
  Float,   // promoted dtype, integers -> float32 (true division, atan2, ...)
  Double,  // always float64 (float_power)
};

inline ScalarType apply_promote(ScalarType common, Promote p) {
  switch (p) {
    case Promote::Common: return common;
    case Promote::Float: return float_compute(common);
    case Promote::Double: return ScalarType::Float64;
  }
  return common;
}

// args = (x, y, <extra args>..., out); x and y Tensor or Scalar.
template <typename Factory>
Error binary_entry(KernelContext& ctx, EValue** args, size_t n, size_t expected, Promote promote,
                   const Factory& factory) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(expected)) return a.error();
  Operand x(a.at(0)), y(a.at(1));
  Tensor* out = a.out(n - 1);
  if (!a.ok()) return a.error();
  if (!x.valid() || !y.valid()) return ctx.fail(Error::InvalidArgument, "expected tensor or scalar operands");
  ResultType r;
  x.add_to(r);
  y.add_to(r);
  return binary_op(ctx, a, x.tensor(), y.tensor(), out, apply_promote(r.get(), promote), factory);
}

}  // namespace portable
}  // namespace ember
