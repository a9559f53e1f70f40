// Unary elementwise math, generated from one template per result kind:
//  - float ops (exp, log, sin, sqrt, sigmoid, erf, ...): integer inputs compute in float32;
//  - same-type ops (abs, neg, ceil, floor, round, trunc, sign, square, ...): the input dtype;
//  - predicates (isnan, isinf, isfinite, signbit, logical_not, ...): bool results.
// Each op registers "aten::<op>.default" and its in-place "aten::<op>_.default".
#include <cmath>
#include <limits>

#include "kernels/portable/util/elementwise_ops.h"
#include "kernels/portable/util/special_math.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

template <typename Factory>
Error float_unary(KernelContext& ctx, EValue** args, size_t n, const Factory& factory) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  return unary_float_op(ctx, a, a.tensor(0), a.out(1), factory);
}

template <typename Factory>
Error same_unary(KernelContext& ctx, EValue** args, size_t n, const Factory& factory) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  return unary_op(ctx, a, x, out, x->dtype, factory);
}

template <typename C>
constexpr bool is_int_v = std::is_integral<C>::value;

#define EMBER_FLOAT_UNARY(name, EXPR)                                       \
  Error name##_kernel(KernelContext& ctx, EValue** args, size_t n) {        \
    return float_unary(ctx, args, n, [](auto tag) {                         \
      using C = decltype(tag);                                              \
      return [](C x) -> C { return EXPR; };                                 \
    });                                                                     \
  }

EMBER_FLOAT_UNARY(exp, std::exp(x))
EMBER_FLOAT_UNARY(exp2, std::exp2(x))
EMBER_FLOAT_UNARY(expm1, std::expm1(x))
EMBER_FLOAT_UNARY(log, std::log(x))
EMBER_FLOAT_UNARY(log2, std::log2(x))
EMBER_FLOAT_UNARY(log10, std::log10(x))
EMBER_FLOAT_UNARY(log1p, std::log1p(x))
EMBER_FLOAT_UNARY(sqrt, std::sqrt(x))
EMBER_FLOAT_UNARY(rsqrt, C(1) / std::sqrt(x))
EMBER_FLOAT_UNARY(sin, std::sin(x))
EMBER_FLOAT_UNARY(cos, std::cos(x))
EMBER_FLOAT_UNARY(tan, std::tan(x))
EMBER_FLOAT_UNARY(asin, std::asin(x))
EMBER_FLOAT_UNARY(acos, std::acos(x))
EMBER_FLOAT_UNARY(atan, std::atan(x))
EMBER_FLOAT_UNARY(sinh, std::sinh(x))
EMBER_FLOAT_UNARY(cosh, std::cosh(x))
EMBER_FLOAT_UNARY(tanh, std::tanh(x))
EMBER_FLOAT_UNARY(asinh, std::asinh(x))
EMBER_FLOAT_UNARY(acosh, std::acosh(x))
EMBER_FLOAT_UNARY(atanh, std::atanh(x))
EMBER_FLOAT_UNARY(erf, std::erf(x))
EMBER_FLOAT_UNARY(erfc, std::erfc(x))
EMBER_FLOAT_UNARY(erfinv, erfinv_value(x))
EMBER_FLOAT_UNARY(lgamma, std::lgamma(x))
EMBER_FLOAT_UNARY(digamma, static_cast<C>(digamma_value(static_cast<double>(x))))
EMBER_FLOAT_UNARY(i0, static_cast<C>(i0_value(static_cast<double>(x))))
#define EMBER_SPECIAL_UNARY(name, EXPR) EMBER_FLOAT_UNARY(name, static_cast<C>(EXPR(static_cast<double>(x))))
EMBER_SPECIAL_UNARY(special_i0e, special_i0e)
EMBER_SPECIAL_UNARY(special_i1, special_i1)
EMBER_SPECIAL_UNARY(special_i1e, special_i1e)
EMBER_SPECIAL_UNARY(special_bessel_j0, [](double v) { return special_bessel_j(0.0, v); })
EMBER_SPECIAL_UNARY(special_bessel_j1, [](double v) { return special_bessel_j(1.0, v); })
EMBER_SPECIAL_UNARY(special_bessel_y0, [](double v) { return special_bessel_y(0.0, v); })
EMBER_SPECIAL_UNARY(special_bessel_y1, [](double v) { return special_bessel_y(1.0, v); })
EMBER_SPECIAL_UNARY(special_modified_bessel_i0, i0_value)
EMBER_SPECIAL_UNARY(special_modified_bessel_i1, special_i1)
EMBER_SPECIAL_UNARY(special_modified_bessel_k0, [](double v) { return special_bessel_k(0.0, v, false); })
EMBER_SPECIAL_UNARY(special_modified_bessel_k1, [](double v) { return special_bessel_k(1.0, v, false); })
EMBER_SPECIAL_UNARY(special_scaled_modified_bessel_k0, [](double v) { return special_bessel_k(0.0, v, true); })
EMBER_SPECIAL_UNARY(special_scaled_modified_bessel_k1, [](double v) { return special_bessel_k(1.0, v, true); })
EMBER_SPECIAL_UNARY(special_spherical_bessel_j0, special_spherical_bessel_j0)
EMBER_SPECIAL_UNARY(special_airy_ai, special_airy_ai)
EMBER_SPECIAL_UNARY(special_erfcx, special_erfcx)
EMBER_SPECIAL_UNARY(special_entr, special_entr)
EMBER_SPECIAL_UNARY(special_log_ndtr, special_log_ndtr)
EMBER_SPECIAL_UNARY(special_ndtri, special_ndtri)
EMBER_SPECIAL_UNARY(special_ndtr, [](double v) { return 0.5 * std::erfc(-v / std::sqrt(2.0)); })
#undef EMBER_SPECIAL_UNARY
EMBER_FLOAT_UNARY(reciprocal, C(1) / x)
EMBER_FLOAT_UNARY(sigmoid, C(1) / (C(1) + std::exp(-x)))
EMBER_FLOAT_UNARY(deg2rad, x * C(M_PI / 180.0))
EMBER_FLOAT_UNARY(rad2deg, x * C(180.0 / M_PI))
EMBER_FLOAT_UNARY(sinc, x == 0 ? C(1) : std::sin(C(M_PI) * x) / (C(M_PI) * x))
EMBER_FLOAT_UNARY(angle, std::isnan(x) ? x : (x < 0 ? C(M_PI) : C(0)))
#undef EMBER_FLOAT_UNARY

#define EMBER_SAME_UNARY(name, INT_EXPR, FLOAT_EXPR)                        \
  Error name##_kernel(KernelContext& ctx, EValue** args, size_t n) {        \
    return same_unary(ctx, args, n, [](auto tag) {                          \
      using C = decltype(tag);                                              \
      return [](C x) -> C {                                                 \
        if constexpr (is_int_v<C>) return INT_EXPR; else return FLOAT_EXPR; \
      };                                                                    \
    });                                                                     \
  }

EMBER_SAME_UNARY(abs, x < 0 ? wrap_sub(0, x) : x, std::fabs(x))
EMBER_SAME_UNARY(neg, wrap_sub(0, x), -x)
EMBER_SAME_UNARY(ceil, x, std::ceil(x))
EMBER_SAME_UNARY(floor, x, std::floor(x))
EMBER_SAME_UNARY(round, x, std::nearbyint(x))
EMBER_SAME_UNARY(trunc, x, std::trunc(x))
EMBER_SAME_UNARY(frac, 0, x - std::trunc(x))
EMBER_SAME_UNARY(sign, static_cast<C>((0 < x) - (x < 0)), static_cast<C>((0 < x) - (x < 0)))
EMBER_SAME_UNARY(square, wrap_mul(x, x), x * x)
EMBER_SAME_UNARY(positive, x, x)
EMBER_SAME_UNARY(identity, x, x)
#undef EMBER_SAME_UNARY

#define EMBER_PREDICATE(name, INT_EXPR, FLOAT_EXPR)                         \
  Error name##_kernel(KernelContext& ctx, EValue** args, size_t n) {        \
    return same_unary(ctx, args, n, [](auto tag) {                          \
      using C = decltype(tag);                                              \
      return [](C x) -> bool {                                              \
        if constexpr (is_int_v<C>) return INT_EXPR; else return FLOAT_EXPR; \
      };                                                                    \
    });                                                                     \
  }

EMBER_PREDICATE(isnan, false, std::isnan(x))
EMBER_PREDICATE(isinf, false, std::isinf(x))
EMBER_PREDICATE(isfinite, true, std::isfinite(x))
EMBER_PREDICATE(isposinf, false, std::isinf(x) && x > 0)
EMBER_PREDICATE(isneginf, false, std::isinf(x) && x < 0)
EMBER_PREDICATE(signbit, x < 0, std::signbit(x))
EMBER_PREDICATE(isreal, true, true)
EMBER_PREDICATE(logical_not, x == 0, x == 0)
#undef EMBER_PREDICATE

// bitwise_not: ~x for integers, logical not for bool.
Error bitwise_not_kernel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* x = a.tensor(0);
  if (!a.ok()) return a.error();
  if (is_floating(x->dtype)) return a.fail("bitwise_not needs an integer or bool tensor"), a.error();
  if (x->dtype == ScalarType::Bool) {
    return same_unary(ctx, args, n, [](auto tag) {
      using C = decltype(tag);
      return [](C v) -> bool { return v == 0; };
    });
  }
  return same_unary(ctx, args, n, [](auto tag) {
    using C = decltype(tag);
    return [](C v) -> C {
      if constexpr (is_int_v<C>) return ~v; else return v;
    };
  });
}

// round.decimals(self, *, int decimals, out)
Error round_decimals_kernel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  int64_t decimals = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (!is_floating(x->dtype)) return unary_op(ctx, a, x, out, x->dtype, [](auto tag) {
      using C = decltype(tag);
      return [](C v) -> C { return v; };
    });
  bool neg = decimals < 0;
  double ten_pow = std::pow(10.0, static_cast<double>(neg ? -decimals : decimals));
  return unary_float_op(ctx, a, x, out, [=](auto tag) {
    using C = decltype(tag);
    C p = static_cast<C>(ten_pow);
    return [=](C v) -> C { return neg ? std::nearbyint(v / p) * p : std::nearbyint(v * p) / p; };
  });
}

// nan_to_num(self, float? nan, float? posinf, float? neginf, out)
Error nan_to_num_kernel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  if (!is_floating(x->dtype)) {
    return unary_op(ctx, a, x, out, x->dtype, [](auto tag) {
      using C = decltype(tag);
      return [](C v) -> C { return v; };
    });
  }
  double max_v = x->dtype == ScalarType::Float64 ? std::numeric_limits<double>::max()
                 : x->dtype == ScalarType::Float16 ? 65504.0
                 : x->dtype == ScalarType::BFloat16 ? 3.3895313892515355e38
                                                     : static_cast<double>(std::numeric_limits<float>::max());
  double nan_v = 0, pos_v = max_v, neg_v = -max_v;
  a.optional_scalar(1, &nan_v);
  a.optional_scalar(2, &pos_v);
  a.optional_scalar(3, &neg_v);
  if (!a.ok()) return a.error();
  return unary_float_op(ctx, a, x, out, [=](auto tag) {
    using C = decltype(tag);
    C cn = static_cast<C>(nan_v), cp = static_cast<C>(pos_v), cm = static_cast<C>(neg_v);
    return [=](C v) -> C {
      if (std::isnan(v)) return cn;
      if (std::isinf(v)) return v > 0 ? cp : cm;
      return v;
    };
  });
}

// polygamma(int n, Tensor self, out)
Error polygamma_kernel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  int64_t order = a.int_value(0);
  const Tensor* x = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (order < 0) return a.fail("polygamma order must be non-negative"), a.error();
  return unary_float_op(ctx, a, x, out, [=](auto tag) {
    using C = decltype(tag);
    return [=](C v) -> C { return static_cast<C>(polygamma_value(order, static_cast<double>(v))); };
  });
}

// mvlgamma(self, int p, out): sum_j lgamma(x - j/2) + p(p-1)/4 log(pi).
Error mvlgamma_kernel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  int64_t p = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (p < 1) return a.fail("mvlgamma needs p >= 1"), a.error();
  double c = static_cast<double>(p * (p - 1)) / 4.0 * std::log(M_PI);
  return unary_float_op(ctx, a, x, out, [=](auto tag) {
    using C = decltype(tag);
    return [=](C v) -> C {
      double s = c;
      for (int64_t j = 0; j < p; ++j) s += std::lgamma(static_cast<double>(v) - static_cast<double>(j) / 2.0);
      return static_cast<C>(s);
    };
  });
}

}  // namespace

#define EMBER_REGISTER_UNARY(op, fn)                       \
  EMBER_REGISTER_KERNEL("aten::" op ".default", fn);       \
  EMBER_REGISTER_KERNEL("aten::" op "_.default", fn)

EMBER_REGISTER_UNARY("exp", exp_kernel);
EMBER_REGISTER_UNARY("exp2", exp2_kernel);
EMBER_REGISTER_UNARY("expm1", expm1_kernel);
EMBER_REGISTER_UNARY("log", log_kernel);
EMBER_REGISTER_UNARY("log2", log2_kernel);
EMBER_REGISTER_UNARY("log10", log10_kernel);
EMBER_REGISTER_UNARY("log1p", log1p_kernel);
EMBER_REGISTER_UNARY("sqrt", sqrt_kernel);
EMBER_REGISTER_UNARY("rsqrt", rsqrt_kernel);
EMBER_REGISTER_UNARY("sin", sin_kernel);
EMBER_REGISTER_UNARY("cos", cos_kernel);
EMBER_REGISTER_UNARY("tan", tan_kernel);
EMBER_REGISTER_UNARY("asin", asin_kernel);
EMBER_REGISTER_UNARY("acos", acos_kernel);
EMBER_REGISTER_UNARY("atan", atan_kernel);
EMBER_REGISTER_UNARY("arcsin", asin_kernel);
EMBER_REGISTER_UNARY("arccos", acos_kernel);
EMBER_REGISTER_UNARY("arctan", atan_kernel);
EMBER_REGISTER_UNARY("sinh", sinh_kernel);
EMBER_REGISTER_UNARY("cosh", cosh_kernel);
EMBER_REGISTER_UNARY("tanh", tanh_kernel);
EMBER_REGISTER_UNARY("asinh", asinh_kernel);
EMBER_REGISTER_UNARY("acosh", acosh_kernel);
EMBER_REGISTER_UNARY("atanh", atanh_kernel);
EMBER_REGISTER_UNARY("erf", erf_kernel);
EMBER_REGISTER_UNARY("erfc", erfc_kernel);
EMBER_REGISTER_UNARY("erfinv", erfinv_kernel);
EMBER_REGISTER_UNARY("lgamma", lgamma_kernel);
EMBER_REGISTER_UNARY("digamma", digamma_kernel);
EMBER_REGISTER_UNARY("i0", i0_kernel);
EMBER_REGISTER_UNARY("reciprocal", reciprocal_kernel);
EMBER_REGISTER_UNARY("sigmoid", sigmoid_kernel);
EMBER_REGISTER_UNARY("deg2rad", deg2rad_kernel);
EMBER_REGISTER_UNARY("rad2deg", rad2deg_kernel);
EMBER_REGISTER_UNARY("sinc", sinc_kernel);
EMBER_REGISTER_KERNEL("aten::angle.default", angle_kernel);
EMBER_REGISTER_UNARY("abs", abs_kernel);
EMBER_REGISTER_KERNEL("aten::absolute.default", abs_kernel);
EMBER_REGISTER_UNARY("neg", neg_kernel);
EMBER_REGISTER_UNARY("negative", neg_kernel);
EMBER_REGISTER_UNARY("ceil", ceil_kernel);
EMBER_REGISTER_UNARY("floor", floor_kernel);
EMBER_REGISTER_UNARY("round", round_kernel);
EMBER_REGISTER_UNARY("trunc", trunc_kernel);
EMBER_REGISTER_UNARY("fix", trunc_kernel);
EMBER_REGISTER_UNARY("frac", frac_kernel);
EMBER_REGISTER_UNARY("sign", sign_kernel);
EMBER_REGISTER_UNARY("sgn", sign_kernel);
EMBER_REGISTER_UNARY("square", square_kernel);
EMBER_REGISTER_KERNEL("aten::positive.default", positive_kernel);
EMBER_REGISTER_KERNEL("aten::resolve_conj.default", identity_kernel);
EMBER_REGISTER_KERNEL("aten::resolve_neg.default", identity_kernel);
EMBER_REGISTER_KERNEL("aten::conj_physical.default", identity_kernel);
EMBER_REGISTER_KERNEL("aten::real.default", identity_kernel);
EMBER_REGISTER_KERNEL("aten::isnan.default", isnan_kernel);
EMBER_REGISTER_KERNEL("aten::isinf.default", isinf_kernel);
EMBER_REGISTER_KERNEL("aten::isfinite.default", isfinite_kernel);
EMBER_REGISTER_KERNEL("aten::isposinf.default", isposinf_kernel);
EMBER_REGISTER_KERNEL("aten::isneginf.default", isneginf_kernel);
EMBER_REGISTER_KERNEL("aten::signbit.default", signbit_kernel);
EMBER_REGISTER_KERNEL("aten::isreal.default", isreal_kernel);
EMBER_REGISTER_UNARY("logical_not", logical_not_kernel);
EMBER_REGISTER_UNARY("bitwise_not", bitwise_not_kernel);
EMBER_REGISTER_KERNEL("aten::round.decimals", round_decimals_kernel);
EMBER_REGISTER_KERNEL("aten::round_.decimals", round_decimals_kernel);
EMBER_REGISTER_UNARY("nan_to_num", nan_to_num_kernel);
EMBER_REGISTER_KERNEL("aten::polygamma.default", polygamma_kernel);
EMBER_REGISTER_KERNEL("aten::special_polygamma.default", polygamma_kernel);  // alias, same (n, self)
// torch.special functions of one argument (util/special_math.h).
EMBER_REGISTER_KERNEL("aten::special_i0e.default", special_i0e_kernel);
EMBER_REGISTER_KERNEL("aten::special_i1.default", special_i1_kernel);
EMBER_REGISTER_KERNEL("aten::special_i1e.default", special_i1e_kernel);
EMBER_REGISTER_KERNEL("aten::special_bessel_j0.default", special_bessel_j0_kernel);
EMBER_REGISTER_KERNEL("aten::special_bessel_j1.default", special_bessel_j1_kernel);
EMBER_REGISTER_KERNEL("aten::special_bessel_y0.default", special_bessel_y0_kernel);
EMBER_REGISTER_KERNEL("aten::special_bessel_y1.default", special_bessel_y1_kernel);
EMBER_REGISTER_KERNEL("aten::special_modified_bessel_i0.default", special_modified_bessel_i0_kernel);
EMBER_REGISTER_KERNEL("aten::special_modified_bessel_i1.default", special_modified_bessel_i1_kernel);
EMBER_REGISTER_KERNEL("aten::special_modified_bessel_k0.default", special_modified_bessel_k0_kernel);
EMBER_REGISTER_KERNEL("aten::special_modified_bessel_k1.default", special_modified_bessel_k1_kernel);
EMBER_REGISTER_KERNEL("aten::special_scaled_modified_bessel_k0.default", special_scaled_modified_bessel_k0_kernel);
EMBER_REGISTER_KERNEL("aten::special_scaled_modified_bessel_k1.default", special_scaled_modified_bessel_k1_kernel);
EMBER_REGISTER_KERNEL("aten::special_spherical_bessel_j0.default", special_spherical_bessel_j0_kernel);
EMBER_REGISTER_KERNEL("aten::special_airy_ai.default", special_airy_ai_kernel);
EMBER_REGISTER_KERNEL("aten::special_erfcx.default", special_erfcx_kernel);
EMBER_REGISTER_KERNEL("aten::special_entr.default", special_entr_kernel);
EMBER_REGISTER_KERNEL("aten::special_log_ndtr.default", special_log_ndtr_kernel);
EMBER_REGISTER_KERNEL("aten::special_ndtri.default", special_ndtri_kernel);
EMBER_REGISTER_KERNEL("aten::special_ndtr.default", special_ndtr_kernel);
EMBER_REGISTER_UNARY("mvlgamma", mvlgamma_kernel);
#undef EMBER_REGISTER_UNARY

}  // namespace portable
}  // namespace ember
