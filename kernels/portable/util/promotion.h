// Type promotion with PyTorch's rules.
//
// promote_types(a, b): the smallest dtype both convert to (bool < integers < floats;
// uint8 with a signed type -> the next signed type that holds both; float16 with bfloat16 ->
// float32). result_type(): the dtype of an op over tensors and scalars, where dimensioned
// tensors take priority over zero-dim tensors, which take priority over Python scalars,
// unless the lower-priority operands are of a higher category (bool < integral < floating):
//   int64[3] + 2.5 -> float32, int32[3] + int64[] -> int32, uint8[3] + 1000 -> uint8,
//   bool[3] + bool[3] -> bool, int32[3] + float64[] -> float64.
#pragma once

#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/tensor.h"

namespace ember {
namespace portable {

ScalarType promote_types(ScalarType a, ScalarType b);

// The dtype a Python scalar (Int, Double or Bool EValue) takes in promotion: int64,
// float32 (the default dtype) or bool.
ScalarType scalar_value_type(const EValue& v);

// Accumulates operands and yields the result dtype.
class ResultType {
 public:
  void add_tensor(const Tensor& t);
  void add_scalar(const EValue& v);
  void add_scalar_type(ScalarType t);  // a wrapped scalar of this category
  ScalarType get() const;

 private:
  static void merge(int& slot, ScalarType t);
  int dim_ = -1;   // -1: none yet
  int zero_ = -1;
  int wrapped_ = -1;
};

inline ScalarType result_type(const Tensor& a, const Tensor& b) {
  ResultType r;
  r.add_tensor(a);
  r.add_tensor(b);
  return r.get();
}
inline ScalarType result_type(const Tensor& a, const EValue& scalar) {
  ResultType r;
  r.add_tensor(a);
  r.add_scalar(scalar);
  return r.get();
}

// 0 bool, 1 integral, 2 floating.
inline int type_category(ScalarType t) {
  return t == ScalarType::Bool ? 0 : is_floating(t) ? 2 : 1;
}

// True when a value of dtype `from` may be written to `to` without a category downgrade
// (PyTorch's can_cast: float -> int and int -> bool are refused).
inline bool can_cast(ScalarType from, ScalarType to) {
  return type_category(from) <= type_category(to);
}

}  // namespace portable
}  // namespace ember
