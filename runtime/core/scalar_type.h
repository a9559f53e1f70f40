// Element types. Numeric values match schema/program.fbs ScalarType (append-only).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

enum class ScalarType : uint8_t {
  Float32 = 0, Float16 = 1, BFloat16 = 2, Float64 = 3,
  Int8 = 4, Int16 = 5, Int32 = 6, Int64 = 7, UInt8 = 8, Bool = 9,
};
constexpr int kNumScalarTypes = 10;

// Bytes per element; 0 for an out-of-range value.
size_t element_size(ScalarType type);
// "float32", "int64", ...; "invalid" for an out-of-range value.
const char* scalar_type_name(ScalarType type);
bool is_valid_scalar_type(int value);
bool is_floating(ScalarType type);
bool is_integral(ScalarType type, bool include_bool);

}  // namespace ember
