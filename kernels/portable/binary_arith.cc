// Binary arithmetic: add/sub/rsub (alpha), mul, div (+rounding_mode), floor_divide,
// remainder, fmod, pow, float_power, atan2, maximum/minimum, fmax/fmin, hypot, copysign,
// nextafter, logaddexp(2), xlogy, heaviside, ldexp, igamma/igammac, special_zeta (Hurwitz).
// Tensor and Scalar overloads share one implementation; broadcasting and type promotion
// follow PyTorch.
#include <cmath>
#include <limits>

#include "kernels/portable/util/binary_util.h"
#include "kernels/portable/util/special_math.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// ---- add / sub / rsub: (self, other, alpha, out) ----
template <bool kSub, bool kReverse>
Error add_sub(KernelContext& ctx, EValue** args, size_t n) {
  if (n != 4) return ctx.fail(Error::InvalidArgument, "wrong number of arguments");
  const EValue& alpha = *args[2];
  bool unit_alpha = alpha.to_double() == 1.0;
  if (unit_alpha) {
    return binary_entry(ctx, args, n, 4, Promote::Common, [](auto tag) {
      using C = decltype(tag);
      return [](C x, C y) -> C {
        if (kReverse) return kSub ? sub_op(y, x) : add_op(y, x);
        return kSub ? sub_op(x, y) : add_op(x, y);
      };
    });
  }
  return binary_entry(ctx, args, n, 4, Promote::Common, [&alpha](auto tag) {
    using C = decltype(tag);
    C al = scalar_to<C>(alpha);
    return [al](C x, C y) -> C {
      if (kReverse) return kSub ? sub_op(y, mul_op(al, x)) : add_op(y, mul_op(al, x));
      return kSub ? sub_op(x, mul_op(al, y)) : add_op(x, mul_op(al, y));
    };
  });
}

Error mul(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C { return mul_op(x, y); };
  });
}

Error true_div_n(KernelContext& ctx, EValue** args, size_t n, size_t expected) {
  return binary_entry(ctx, args, n, expected, Promote::Float, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if constexpr (std::is_integral<C>::value) return safe_div_trunc(x, y);
      else return x / y;
    };
  });
}

Error true_div(KernelContext& ctx, EValue** args, size_t n) { return true_div_n(ctx, args, n, 3); }

template <bool kFloor>
Error rounded_div(KernelContext& ctx, EValue** args, size_t n, size_t expected) {
  return binary_entry(ctx, args, n, expected, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if constexpr (std::is_integral<C>::value) {
        return kFloor ? safe_div_floor(x, y) : safe_div_trunc(x, y);
      } else {
        return kFloor ? float_div_floor(x, y) : std::trunc(x / y);
      }
    };
  });
}

// div.Tensor_mode / div.Scalar_mode: (self, other, rounding_mode, out).
Error div_mode(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  if (a.is_none(2)) return true_div_n(ctx, args, n, 4);
  if (a.string_is(2, "trunc")) return rounded_div<false>(ctx, args, n, 4);
  if (a.string_is(2, "floor")) return rounded_div<true>(ctx, args, n, 4);
  return ctx.fail(Error::InvalidArgument, "rounding_mode must be None, 'trunc' or 'floor'");
}

Error floor_divide(KernelContext& ctx, EValue** args, size_t n) {
  return rounded_div<true>(ctx, args, n, 3);
}

Error remainder(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if constexpr (std::is_integral<C>::value) return safe_mod_floor(x, y);
      else return float_mod_floor(x, y);
    };
  });
}

Error fmod_kernel(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if constexpr (std::is_integral<C>::value) return safe_mod_trunc(x, y);
      else return std::fmod(x, y);
    };
  });
}

inline int64_t int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  int64_t r = 1;
  while (exp > 0) {
    if (exp & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return r;
}

template <typename C>
inline C pow_value(C x, C y) {
  if constexpr (std::is_integral<C>::value) return int_pow(x, y);
  else return std::pow(x, y);
}

Error pow_kernel(KernelContext& ctx, EValue** args, size_t n) {
  // Common exponents of pow.Tensor_Scalar get exact, vectorisable forms.
  if (n == 3 && !args[1]->is_tensor() && args[0]->is_tensor() &&
      is_floating(args[0]->as_tensor->dtype)) {
    double e = args[1]->to_double();
    if (e == 2.0) {
      return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
        using C = decltype(tag);
        return [](C x, C) -> C { return mul_op(x, x); };
      });
    }
    if (e == 1.0) {
      return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
        using C = decltype(tag);
        return [](C x, C) -> C { return x; };
      });
    }
  }
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C { return pow_value(x, y); };
  });
}

Error float_power(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Double, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C { return pow_value(x, y); };
  });
}

// Generic float binary ops (integers promote to float32).
#define EMBER_FLOAT_BINARY(fn_name, EXPR)                                        \
  Error fn_name(KernelContext& ctx, EValue** args, size_t n) {                   \
    return binary_entry(ctx, args, n, 3, Promote::Float, [](auto tag) {          \
      using C = decltype(tag);                                                   \
      return [](C x, C y) -> C {                                                 \
        if constexpr (std::is_integral<C>::value) {                              \
          return x;                                                              \
        } else {                                                                 \
          return EXPR;                                                           \
        }                                                                        \
      };                                                                         \
    });                                                                          \
  }

EMBER_FLOAT_BINARY(atan2_kernel, std::atan2(x, y))
EMBER_FLOAT_BINARY(hypot_kernel, std::hypot(x, y))
EMBER_FLOAT_BINARY(copysign_kernel, std::copysign(x, y))
EMBER_FLOAT_BINARY(nextafter_kernel, std::nextafter(x, y))
EMBER_FLOAT_BINARY(logaddexp_kernel,
                   (std::isinf(x) && x == y) ? x
                   : (x > y ? x + std::log1p(std::exp(y - x)) : y + std::log1p(std::exp(x - y))))
EMBER_FLOAT_BINARY(logaddexp2_kernel,
                   (std::isinf(x) && x == y) ? x
                   : (x > y ? x + std::log1p(std::exp2(y - x)) / C(0.6931471805599453)
                            : y + std::log1p(std::exp2(x - y)) / C(0.6931471805599453)))
EMBER_FLOAT_BINARY(xlogy_kernel,
                   std::isnan(y) ? y : (x == 0 ? C(0) : x * std::log(y)))
EMBER_FLOAT_BINARY(ldexp_kernel, x * std::exp2(y))
EMBER_FLOAT_BINARY(igamma_kernel, static_cast<C>(igamma_value(x, y, false)))
EMBER_FLOAT_BINARY(igammac_kernel, static_cast<C>(igamma_value(x, y, true)))
EMBER_FLOAT_BINARY(zeta_kernel, static_cast<C>(hurwitz_zeta(static_cast<double>(x), static_cast<double>(y))))
#undef EMBER_FLOAT_BINARY

template <typename C>
inline bool is_nan_value(C v) {
  if constexpr (std::is_integral<C>::value) return false; else return std::isnan(v);
}

// maximum/minimum propagate NaN; fmax/fmin ignore it.
template <bool kMax, bool kPropagateNan>
Error max_min(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if (kPropagateNan) {
        if (is_nan_value(x)) return x;
        if (is_nan_value(y)) return y;
      } else {
        if (is_nan_value(x)) return y;
        if (is_nan_value(y)) return x;
      }
      return kMax ? (x > y ? x : y) : (x < y ? x : y);
    };
  });
}

Error heaviside(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if (x == 0) return y;
      if (is_nan_value(x)) return x;
      return x > 0 ? C(1) : C(0);
    };
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::add.Tensor", (add_sub<false, false>));
EMBER_REGISTER_KERNEL("aten::add.Scalar", (add_sub<false, false>));
EMBER_REGISTER_KERNEL("aten::add_.Tensor", (add_sub<false, false>));
EMBER_REGISTER_KERNEL("aten::add_.Scalar", (add_sub<false, false>));
EMBER_REGISTER_KERNEL("aten::sub.Tensor", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::sub.Scalar", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::sub_.Tensor", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::sub_.Scalar", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::rsub.Tensor", (add_sub<true, true>));
EMBER_REGISTER_KERNEL("aten::rsub.Scalar", (add_sub<true, true>));
EMBER_REGISTER_KERNEL("aten::mul.Tensor", mul);
EMBER_REGISTER_KERNEL("aten::mul.Scalar", mul);
EMBER_REGISTER_KERNEL("aten::mul_.Tensor", mul);
EMBER_REGISTER_KERNEL("aten::mul_.Scalar", mul);
EMBER_REGISTER_KERNEL("aten::div.Tensor", true_div);
EMBER_REGISTER_KERNEL("aten::div.Scalar", true_div);
EMBER_REGISTER_KERNEL("aten::div_.Tensor", true_div);
EMBER_REGISTER_KERNEL("aten::div_.Scalar", true_div);
EMBER_REGISTER_KERNEL("aten::true_divide.Tensor", true_div);
EMBER_REGISTER_KERNEL("aten::true_divide.Scalar", true_div);
// subtract / multiply / divide are aliases of sub / mul / div (torch.subtract, ...): the
// training IR keeps the alias name.
EMBER_REGISTER_KERNEL("aten::subtract.Tensor", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::subtract.Scalar", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::subtract_.Tensor", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::subtract_.Scalar", (add_sub<true, false>));
EMBER_REGISTER_KERNEL("aten::multiply.Tensor", mul);
EMBER_REGISTER_KERNEL("aten::multiply.Scalar", mul);
EMBER_REGISTER_KERNEL("aten::multiply_.Tensor", mul);
EMBER_REGISTER_KERNEL("aten::multiply_.Scalar", mul);
EMBER_REGISTER_KERNEL("aten::divide.Tensor", true_div);
EMBER_REGISTER_KERNEL("aten::divide.Scalar", true_div);
EMBER_REGISTER_KERNEL("aten::divide_.Tensor", true_div);
EMBER_REGISTER_KERNEL("aten::divide_.Scalar", true_div);
EMBER_REGISTER_KERNEL("aten::divide.Tensor_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::divide.Scalar_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::divide_.Tensor_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::div.Tensor_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::div.Scalar_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::div_.Tensor_mode", div_mode);
EMBER_REGISTER_KERNEL("aten::floor_divide.default", floor_divide);
EMBER_REGISTER_KERNEL("aten::floor_divide.Scalar", floor_divide);
EMBER_REGISTER_KERNEL("aten::remainder.Tensor", remainder);
EMBER_REGISTER_KERNEL("aten::remainder.Scalar", remainder);
EMBER_REGISTER_KERNEL("aten::remainder.Scalar_Tensor", remainder);
EMBER_REGISTER_KERNEL("aten::fmod.Tensor", fmod_kernel);
EMBER_REGISTER_KERNEL("aten::fmod.Scalar", fmod_kernel);
EMBER_REGISTER_KERNEL("aten::pow.Tensor_Tensor", pow_kernel);
EMBER_REGISTER_KERNEL("aten::pow.Tensor_Scalar", pow_kernel);
EMBER_REGISTER_KERNEL("aten::pow.Scalar", pow_kernel);
EMBER_REGISTER_KERNEL("aten::pow_.Scalar", pow_kernel);
EMBER_REGISTER_KERNEL("aten::pow_.Tensor", pow_kernel);
EMBER_REGISTER_KERNEL("aten::float_power.Tensor_Tensor", float_power);
EMBER_REGISTER_KERNEL("aten::float_power.Tensor_Scalar", float_power);
EMBER_REGISTER_KERNEL("aten::float_power.Scalar", float_power);
EMBER_REGISTER_KERNEL("aten::atan2.default", atan2_kernel);
EMBER_REGISTER_KERNEL("aten::arctan2.default", atan2_kernel);
EMBER_REGISTER_KERNEL("aten::hypot.default", hypot_kernel);
EMBER_REGISTER_KERNEL("aten::copysign.Tensor", copysign_kernel);
EMBER_REGISTER_KERNEL("aten::copysign.Scalar", copysign_kernel);
EMBER_REGISTER_KERNEL("aten::nextafter.default", nextafter_kernel);
EMBER_REGISTER_KERNEL("aten::logaddexp.default", logaddexp_kernel);
EMBER_REGISTER_KERNEL("aten::logaddexp2.default", logaddexp2_kernel);
EMBER_REGISTER_KERNEL("aten::xlogy.Tensor", xlogy_kernel);
EMBER_REGISTER_KERNEL("aten::xlogy.Scalar_Other", xlogy_kernel);
EMBER_REGISTER_KERNEL("aten::xlogy.Scalar_Self", xlogy_kernel);
EMBER_REGISTER_KERNEL("aten::ldexp.Tensor", ldexp_kernel);
EMBER_REGISTER_KERNEL("aten::igamma.default", igamma_kernel);
EMBER_REGISTER_KERNEL("aten::igammac.default", igammac_kernel);
EMBER_REGISTER_KERNEL("aten::special_zeta.default", zeta_kernel);
EMBER_REGISTER_KERNEL("aten::special_zeta.other_scalar", zeta_kernel);
EMBER_REGISTER_KERNEL("aten::special_zeta.self_scalar", zeta_kernel);
EMBER_REGISTER_KERNEL("aten::maximum.default", (max_min<true, true>));
EMBER_REGISTER_KERNEL("aten::minimum.default", (max_min<false, true>));
EMBER_REGISTER_KERNEL("aten::max.other", (max_min<true, true>));
EMBER_REGISTER_KERNEL("aten::min.other", (max_min<false, true>));
EMBER_REGISTER_KERNEL("aten::fmax.default", (max_min<true, false>));
EMBER_REGISTER_KERNEL("aten::fmin.default", (max_min<false, false>));
EMBER_REGISTER_KERNEL("aten::heaviside.default", heaviside);

}  // namespace portable
}  // namespace ember
