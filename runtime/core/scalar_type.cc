#include "runtime/core/scalar_type.h"

namespace ember {

size_t element_size(ScalarType type) {
  switch (type) {
    case ScalarType::Float32: return 4;
    case ScalarType::Float16: return 2;
    case ScalarType::BFloat16: return 2;
    case ScalarType::Float64: return 8;
    case ScalarType::Int8: return 1;
    case ScalarType::Int16: return 2;
    case ScalarType::Int32: return 4;
    case ScalarType::Int64: return 8;
    case ScalarType::UInt8: return 1;
    case ScalarType::Bool: return 1;
  }
  return 0;
}

const char* scalar_type_name(ScalarType type) {
  switch (type) {
    case ScalarType::Float32: return "float32";
    case ScalarType::Float16: return "float16";
    case ScalarType::BFloat16: return "bfloat16";
    case ScalarType::Float64: return "float64";
    case ScalarType::Int8: return "int8";
    case ScalarType::Int16: return "int16";
    case ScalarType::Int32: return "int32";
    case ScalarType::Int64: return "int64";
    case ScalarType::UInt8: return "uint8";
    case ScalarType::Bool: return "bool";
  }
  return "invalid";
}

bool is_valid_scalar_type(int value) { return value >= 0 && value < kNumScalarTypes; }

bool is_floating(ScalarType type) {
  return type == ScalarType::Float32 || type == ScalarType::Float16 ||
         type == ScalarType::BFloat16 || type == ScalarType::Float64;
}

bool is_integral(ScalarType type, bool include_bool) {
  switch (type) {
    case ScalarType::Int8:
    case ScalarType::Int16:
    case ScalarType::Int32:
    case ScalarType::Int64:
    case ScalarType::UInt8:
      return true;
    case ScalarType::Bool:
      return include_bool;
    default:
      return false;
  }
}

}  // namespace ember
