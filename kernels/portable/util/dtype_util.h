// Element types for the portable kernels: 16-bit float storage types, the C++ type of each
// ScalarType, conversions between them, and dispatch over dtypes.
//
// Kernels compute in a "compute type": float for float32/float16/bfloat16, double for
// float64 and int64_t for every integer type and bool. Values are converted on load and
// store, so integer stores wrap like PyTorch (uint8 200 + 100 -> 44) and half-precision
// results are rounded once per op, as PyTorch's CPU kernels do.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/core/float16.h"
#include "runtime/core/scalar_type.h"

namespace ember {
namespace portable {

// IEEE binary16 storage.
struct Half {
  uint16_t bits;
};
// bfloat16 storage (upper half of a binary32).
struct BFloat16 {
  uint16_t bits;
};

// The bit conversions live in runtime/core/float16.h (delegates and the exporter use them too).
using ember::bf16_to_float;
using ember::bits_to_float;
using ember::float_to_bf16;
using ember::float_to_bits;
using ember::float_to_half;
using ember::half_to_float;

// Storage type -> compute type.
template <typename T> struct ComputeOf { using type = int64_t; };
template <> struct ComputeOf<float> { using type = float; };
template <> struct ComputeOf<double> { using type = double; };
template <> struct ComputeOf<Half> { using type = float; };
template <> struct ComputeOf<BFloat16> { using type = float; };
template <typename T> using compute_t = typename ComputeOf<T>::type;

// Conversion from any storage/compute type to any other.
template <typename To, typename From>
inline To convert(From v);

namespace detail {
template <typename To>
struct Converter {
  template <typename From>
  static To from(From v) { return static_cast<To>(v); }
  static To from(Half v) { return static_cast<To>(half_to_float(v.bits)); }
  static To from(BFloat16 v) { return static_cast<To>(bf16_to_float(v.bits)); }
  static To from(bool v) { return static_cast<To>(v ? 1 : 0); }
};
template <>
struct Converter<bool> {
  template <typename From>
  static bool from(From v) { return v != 0; }
  static bool from(float v) { return v != 0.0f; }
  static bool from(double v) { return v != 0.0; }
  static bool from(Half v) { return (v.bits & 0x7fffu) != 0; }
  static bool from(BFloat16 v) { return (v.bits & 0x7fffu) != 0; }
  static bool from(bool v) { return v; }
};
template <>
struct Converter<Half> {
  template <typename From>
  static Half from(From v) { return Half{float_to_half(static_cast<float>(v))}; }
  static Half from(Half v) { return v; }
  static Half from(BFloat16 v) { return Half{float_to_half(bf16_to_float(v.bits))}; }
  static Half from(bool v) { return Half{static_cast<uint16_t>(v ? 0x3c00u : 0u)}; }
};
template <>
struct Converter<BFloat16> {
  template <typename From>
  static BFloat16 from(From v) { return BFloat16{float_to_bf16(static_cast<float>(v))}; }
  static BFloat16 from(BFloat16 v) { return v; }
  static BFloat16 from(Half v) { return BFloat16{float_to_bf16(half_to_float(v.bits))}; }
  static BFloat16 from(bool v) { return BFloat16{static_cast<uint16_t>(v ? 0x3f80u : 0u)}; }
};

// Float -> integer conversions saturate NaN/inf to something defined instead of UB.
template <typename I, typename F>
inline I float_to_int(F v) {
  if (!(v == v)) return 0;
  if (v >= static_cast<F>(9.2233720368547758e18)) return static_cast<I>(INT64_MAX);
  if (v <= static_cast<F>(-9.2233720368547758e18)) return static_cast<I>(INT64_MIN);
  return static_cast<I>(static_cast<int64_t>(v));
}
}  // namespace detail

template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_integral<To>::value && !std::is_same<To, bool>::value &&
                std::is_floating_point<From>::value) {
    return detail::float_to_int<To>(v);
  } else if constexpr (std::is_integral<To>::value && !std::is_same<To, bool>::value &&
                       (std::is_same<From, Half>::value || std::is_same<From, BFloat16>::value)) {
    return detail::float_to_int<To>(convert<float>(v));
  } else {
    return detail::Converter<To>::from(v);
  }
}

// Loads element i of a buffer of dtype `t` as compute type C (a switch per element; use
// typed pointers in hot paths).
template <typename C>
inline C load_as(const void* p, ScalarType t, int64_t i) {
  switch (t) {
    case ScalarType::Float32: return convert<C>(static_cast<const float*>(p)[i]);
    case ScalarType::Float16: return convert<C>(static_cast<const Half*>(p)[i]);
    case ScalarType::BFloat16: return convert<C>(static_cast<const BFloat16*>(p)[i]);
    case ScalarType::Float64: return convert<C>(static_cast<const double*>(p)[i]);
    case ScalarType::Int8: return convert<C>(static_cast<const int8_t*>(p)[i]);
    case ScalarType::Int16: return convert<C>(static_cast<const int16_t*>(p)[i]);
    case ScalarType::Int32: return convert<C>(static_cast<const int32_t*>(p)[i]);
    case ScalarType::Int64: return convert<C>(static_cast<const int64_t*>(p)[i]);
    case ScalarType::UInt8: return convert<C>(static_cast<const uint8_t*>(p)[i]);
    // Read as a byte: a bool tensor from a caller or a constant may hold any byte, and
    // loading a byte other than 0/1 as `bool` is undefined; non-zero is true.
    case ScalarType::Bool: return convert<C>(static_cast<const uint8_t*>(p)[i] != 0);
  }
  return C();
}

template <typename C>
inline void store_as(void* p, ScalarType t, int64_t i, C v) {
  switch (t) {
    case ScalarType::Float32: static_cast<float*>(p)[i] = convert<float>(v); return;
    case ScalarType::Float16: static_cast<Half*>(p)[i] = convert<Half>(v); return;
    case ScalarType::BFloat16: static_cast<BFloat16*>(p)[i] = convert<BFloat16>(v); return;
    case ScalarType::Float64: static_cast<double*>(p)[i] = convert<double>(v); return;
    case ScalarType::Int8: static_cast<int8_t*>(p)[i] = convert<int8_t>(v); return;
    case ScalarType::Int16: static_cast<int16_t*>(p)[i] = convert<int16_t>(v); return;
    case ScalarType::Int32: static_cast<int32_t*>(p)[i] = convert<int32_t>(v); return;
    case ScalarType::Int64: static_cast<int64_t*>(p)[i] = convert<int64_t>(v); return;
    case ScalarType::UInt8: static_cast<uint8_t*>(p)[i] = convert<uint8_t>(v); return;
    case ScalarType::Bool: static_cast<bool*>(p)[i] = convert<bool>(v); return;
  }
}

// Integer conversion for uint8/int8/...: float -> int goes through int64 and wraps.
// (convert<uint8_t>(int64_t) wraps modulo 2^8 like PyTorch.)

// The compute type for a dtype as a tag for dispatch.
enum class ComputeKind : uint8_t { Float, Double, Int };
inline ComputeKind compute_kind(ScalarType t) {
  if (t == ScalarType::Float64) return ComputeKind::Double;
  if (is_floating(t)) return ComputeKind::Float;
  return ComputeKind::Int;
}

}  // namespace portable
}  // namespace ember

// Runs the statements in __VA_ARGS__ with `C` bound to the compute type of `dtype`
// (float, double or int64_t).
#define EMBER_DISPATCH_COMPUTE(dtype, C, ...)                                   \
  do {                                                                          \
    switch (::ember::portable::compute_kind(dtype)) {                           \
      case ::ember::portable::ComputeKind::Float: { using C = float; __VA_ARGS__; break; }   \
      case ::ember::portable::ComputeKind::Double: { using C = double; __VA_ARGS__; break; } \
      case ::ember::portable::ComputeKind::Int: { using C = int64_t; __VA_ARGS__; break; }  \
    }                                                                           \
  } while (0)

// Runs __VA_ARGS__ with `T` bound to the storage type of `dtype` (all ten dtypes).
#define EMBER_DISPATCH_ALL(dtype, T, ...)                                               \
  do {                                                                                  \
    switch (dtype) {                                                                    \
      case ::ember::ScalarType::Float32: { using T = float; __VA_ARGS__; break; }       \
      case ::ember::ScalarType::Float16: { using T = ::ember::portable::Half; __VA_ARGS__; break; } \
      case ::ember::ScalarType::BFloat16: { using T = ::ember::portable::BFloat16; __VA_ARGS__; break; } \
      case ::ember::ScalarType::Float64: { using T = double; __VA_ARGS__; break; }      \
      case ::ember::ScalarType::Int8: { using T = int8_t; __VA_ARGS__; break; }         \
      case ::ember::ScalarType::Int16: { using T = int16_t; __VA_ARGS__; break; }       \
      case ::ember::ScalarType::Int32: { using T = int32_t; __VA_ARGS__; break; }       \
      case ::ember::ScalarType::Int64: { using T = int64_t; __VA_ARGS__; break; }       \
      case ::ember::ScalarType::UInt8: { using T = uint8_t; __VA_ARGS__; break; }       \
      case ::ember::ScalarType::Bool: { using T = bool; __VA_ARGS__; break; }           \
    }                                                                                   \
  } while (0)
