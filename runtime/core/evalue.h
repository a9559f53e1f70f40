// EValue: one entry of a method's value table (a tagged union).
//
// Lists and strings point into method-allocator memory or the loaded program; an EValue
// never owns memory. Tensors are held by pointer to a Tensor in the method's tensor table.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/span.h"
#include "runtime/core/tensor.h"

namespace ember {

enum class ValueTag : uint8_t {
  None, Int, Double, Bool, String, Tensor, IntList, DoubleList, BoolList, TensorList,
  OptionalTensorList,
};

struct EValue;

// Int list whose element i is items[i], or — when refs && refs[i] >= 0 — the current Int
// value at values[refs[i]] (symbolic sizes computed by the method). Read it via get().
struct IntListValue {
  int64_t* items;
  const int32_t* refs;  // may be null
  const EValue* values;
  size_t size;
  // Refreshes symbolic entries and returns the elements.
  Span<const int64_t> get() const;
};

struct StringValue {
  const char* data;
  size_t size;
};

struct EValue {
  ValueTag tag = ValueTag::None;
  union {
    int64_t as_int;
    double as_double;
    bool as_bool;
    StringValue as_string;
    Tensor* as_tensor;
    IntListValue as_int_list;
    Span<const double> as_double_list;
    Span<const bool> as_bool_list;
    Span<Tensor* const> as_tensor_list;  // entries are null for None in optional lists
  };
  EValue() : as_int(0) {}

  bool is_none() const { return tag == ValueTag::None; }
  bool is_tensor() const { return tag == ValueTag::Tensor; }
  bool is_int() const { return tag == ValueTag::Int; }
  bool is_double() const { return tag == ValueTag::Double; }
  bool is_bool() const { return tag == ValueTag::Bool; }
  bool is_int_list() const { return tag == ValueTag::IntList; }
  bool is_tensor_list() const {
    return tag == ValueTag::TensorList || tag == ValueTag::OptionalTensorList;
  }
  // Numeric scalar as double (Int, Double or Bool); 0 otherwise.
  double to_double() const {
    return tag == ValueTag::Double ? as_double
           : tag == ValueTag::Int  ? static_cast<double>(as_int)
           : tag == ValueTag::Bool ? (as_bool ? 1.0 : 0.0)
                                   : 0.0;
  }
};

inline Span<const int64_t> IntListValue::get() const {
  if (refs != nullptr) {
    for (size_t i = 0; i < size; ++i) {
      if (refs[i] >= 0) items[i] = values[refs[i]].as_int;
    }
  }
  return Span<const int64_t>(items, size);
}

}  // namespace ember
