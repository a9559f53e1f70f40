#include "kernels/portable/util/promotion.h"

namespace ember {
namespace portable {
namespace {

// Integer rank for promotion among signed types; uint8 handled separately.
int int_bits(ScalarType t) {
  switch (t) {
    case ScalarType::Int8: return 8;
    case ScalarType::Int16: return 16;
    case ScalarType::Int32: return 32;
    case ScalarType::Int64: return 64;
    default: return 0;
  }
}

int float_rank(ScalarType t) {
  switch (t) {
    case ScalarType::Float16: return 1;
    case ScalarType::BFloat16: return 1;
    case ScalarType::Float32: return 2;
    case ScalarType::Float64: return 3;
    default: return 0;
  }
}

}  // namespace

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == ScalarType::Bool) return b;
  if (b == ScalarType::Bool) return a;
  bool fa = is_floating(a), fb = is_floating(b);
  if (fa && fb) {
    int ra = float_rank(a), rb = float_rank(b);
    if (ra == rb) return ScalarType::Float32;  // float16 with bfloat16
    return ra > rb ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integral, different.
  if (a == ScalarType::UInt8 || b == ScalarType::UInt8) {
    ScalarType other = a == ScalarType::UInt8 ? b : a;
    int bits = int_bits(other);
    return bits <= 8 ? ScalarType::Int16 : other;
  }
  return int_bits(a) >= int_bits(b) ? a : b;
}

ScalarType scalar_value_type(const EValue& v) {
  if (v.is_double()) return ScalarType::Float32;
  if (v.is_bool()) return ScalarType::Bool;
  return ScalarType::Int64;
}

void ResultType::merge(int& slot, ScalarType t) {
  slot = slot < 0 ? static_cast<int>(t) : static_cast<int>(promote_types(static_cast<ScalarType>(slot), t));
}

void ResultType::add_tensor(const Tensor& t) { merge(t.rank == 0 ? zero_ : dim_, t.dtype); }
void ResultType::add_scalar(const EValue& v) { merge(wrapped_, scalar_value_type(v)); }
void ResultType::add_scalar_type(ScalarType t) {
  // A wrapped float scalar participates as the default dtype.
  merge(wrapped_, is_floating(t) ? ScalarType::Float32 : t);
}

ScalarType ResultType::get() const {
  // Higher-priority result wins unless the lower one is of a higher category.
  auto combine = [](int higher, int lower) -> int {
    if (higher < 0) return lower;
    if (lower < 0) return higher;
    ScalarType h = static_cast<ScalarType>(higher), l = static_cast<ScalarType>(lower);
    if (type_category(l) > type_category(h)) return static_cast<int>(promote_types(h, l));
    return higher;
  };
  int r = combine(dim_, combine(zero_, wrapped_));
  return r < 0 ? ScalarType::Float32 : static_cast<ScalarType>(r);
}

}  // namespace portable
}  // namespace ember
