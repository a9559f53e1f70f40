// Activations and clamps: relu, relu6, hardtanh, hardswish, hardsigmoid, silu, gelu
// (none/tanh), elu, celu, selu, leaky_relu, softplus, mish, logit, threshold, hardshrink,
// softshrink, log_sigmoid, prelu, glu, clamp (Scalar/Tensor, optional bounds),
// clamp_min/clamp_max. In-place variants ("<op>_") share the kernels.
#include <cmath>

#include "kernels/portable/util/binary_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

template <typename C>
constexpr bool is_int_v = std::is_integral<C>::value;

// ops whose arguments are (self, <scalars...>, out); `nargs` includes out.
template <typename Factory>
Error float_act(KernelContext& ctx, EValue** args, size_t n, size_t nargs, const Factory& factory) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(nargs)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(nargs - 1);
  if (!a.ok()) return a.error();
  return unary_float_op(ctx, a, x, out, factory);
}

Error relu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  return unary_op(ctx, a, x, out, x->dtype, [](auto tag) {
    using C = decltype(tag);
    return [](C v) -> C { return v < C(0) ? C(0) : v; };
  });
}

// hardtanh(self, min_val, max_val); relu6(self) = hardtanh(self, 0, 6).
Error clamp_scalars(KernelContext& ctx, KernelArgs& a, const Tensor* x, Tensor* out, double lo,
                    bool has_lo, double hi, bool has_hi, ScalarType compute) {
  return unary_op(ctx, a, x, out, compute, [=](auto tag) {
    using C = decltype(tag);
    C l = has_lo ? convert<C>(lo) : C(0), h = has_hi ? convert<C>(hi) : C(0);
    return [=](C v) -> C {
      if (has_lo && v < l) v = l;
      if (has_hi && v > h) v = h;
      return v;
    };
  });
}

Error hardtanh(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  double lo = a.scalar(1), hi = a.scalar(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  return clamp_scalars(ctx, a, x, out, lo, true, hi, true, x->dtype);
}

Error relu6(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  return clamp_scalars(ctx, a, x, out, 0, true, 6, true, x->dtype);
}

// clamp.default(self, Scalar? min, Scalar? max) and clamp.Tensor(self, Tensor? min, Tensor? max).
Error clamp(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  const EValue& lo = a.at(1);
  const EValue& hi = a.at(2);
  if (lo.is_none() && hi.is_none()) return a.fail("clamp needs at least one of min and max"), a.error();
  ResultType rt;
  rt.add_tensor(*x);
  if (lo.is_tensor() || hi.is_tensor()) {
    if (lo.is_tensor()) rt.add_tensor(*lo.as_tensor);
    if (hi.is_tensor()) rt.add_tensor(*hi.as_tensor);
    ScalarType compute = rt.get();
    Operand lo_op(lo), hi_op(hi);
    bool has_lo = !lo.is_none(), has_hi = !hi.is_none();
    // A missing bound is replaced by the other one and ignored in the lambda.
    const Tensor* lt = has_lo ? lo_op.tensor() : hi_op.tensor();
    const Tensor* ht = has_hi ? hi_op.tensor() : lo_op.tensor();
    return ternary_op(ctx, a, x, lt, ht, out, compute, [=](auto tag) {
      using C = decltype(tag);
      return [=](C v, C l, C h) -> C {
        if constexpr (!is_int_v<C>) {
          if (std::isnan(v)) return v;
        }
        if (has_lo && v < l) v = l;
        if (has_hi && v > h) v = h;
        return v;
      };
    });
  }
  if (!lo.is_none()) rt.add_scalar(lo);
  if (!hi.is_none()) rt.add_scalar(hi);
  return clamp_scalars(ctx, a, x, out, lo.to_double(), !lo.is_none(), hi.to_double(), !hi.is_none(),
                       rt.get());
}

// clamp_min / clamp_max (.default with a Scalar, .Tensor with a tensor).
template <bool kMin>
Error clamp_one(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C v, C b) -> C {
      if constexpr (!is_int_v<C>) {
        if (std::isnan(v) || std::isnan(b)) return v + b;
      }
      return kMin ? (v < b ? b : v) : (v > b ? b : v);
    };
  });
}

#define EMBER_ACT(name, NARGS, SETUP, EXPR)                                   \
  Error name(KernelContext& ctx, EValue** args, size_t n) {                   \
    KernelArgs a(ctx, args, n);                                               \
    if (!a.expect(NARGS)) return a.error();                                   \
    SETUP;                                                                    \
    if (!a.ok()) return a.error();                                            \
    return float_act(ctx, args, n, NARGS, [=](auto tag) {                     \
      using C = decltype(tag);                                                \
      return [=](C x) -> C { return EXPR; };                                  \
    });                                                                       \
  }

EMBER_ACT(hardswish, 2, (void)0, x * std::fmin(std::fmax(x + C(3), C(0)), C(6)) / C(6))
EMBER_ACT(hardsigmoid, 2, (void)0, std::fmin(std::fmax(x + C(3), C(0)), C(6)) / C(6))
EMBER_ACT(silu, 2, (void)0, x / (C(1) + std::exp(-x)))
EMBER_ACT(mish, 2, (void)0, x * std::tanh(x > C(20) ? x : std::log1p(std::exp(x))))
EMBER_ACT(selu, 2, (void)0,
          C(1.0507009873554804934) * (x > 0 ? x : C(1.6732632423543772848) * std::expm1(x)))
EMBER_ACT(log_sigmoid, 2, (void)0, std::fmin(x, C(0)) - std::log1p(std::exp(-std::fabs(x))))
EMBER_ACT(elu, 5, double alpha = a.scalar(1); double scale = a.scalar(2); double in_scale = a.scalar(3),
          x > 0 ? C(scale) * x : C(scale) * C(alpha) * std::expm1(x * C(in_scale)))
EMBER_ACT(celu, 3, double alpha = a.scalar(1),
          (x > 0 ? x : C(0)) + std::fmin(C(0), C(alpha) * std::expm1(x / C(alpha))))
EMBER_ACT(leaky_relu, 3, double slope = a.scalar(1), x > 0 ? x : x * C(slope))
EMBER_ACT(softplus, 4, double beta = a.scalar(1); double thr = a.scalar(2),
          x * C(beta) > C(thr) ? x : std::log1p(std::exp(x * C(beta))) / C(beta))
EMBER_ACT(hardshrink, 3, double l = a.scalar(1), (x >= -C(l) && x <= C(l)) ? C(0) : x)
EMBER_ACT(softshrink, 3, double l = a.scalar(1),
          x > C(l) ? x - C(l) : (x < -C(l) ? x + C(l) : C(0)))
#undef EMBER_ACT

// gelu(self, *, approximate='none'|'tanh')
Error gelu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  bool tanh_approx = a.string_is(1, "tanh");
  if (!tanh_approx && !a.string_is(1, "none") && !a.is_none(1)) {
    return a.fail("approximate must be 'none' or 'tanh'"), a.error();
  }
  if (tanh_approx) {
    return float_act(ctx, args, n, 3, [](auto tag) {
      using C = decltype(tag);
      return [](C x) -> C {
        const C k = C(0.7978845608028654);  // sqrt(2 / pi)
        return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
      };
    });
  }
  return float_act(ctx, args, n, 3, [](auto tag) {
    using C = decltype(tag);
    return [](C x) -> C { return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476))); };
  });
}

// logit(self, float? eps)
Error logit(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  double eps = 0;
  bool has_eps = a.optional_scalar(1, &eps);
  if (!a.ok()) return a.error();
  return float_act(ctx, args, n, 3, [=](auto tag) {
    using C = decltype(tag);
    C lo = C(eps), hi = C(1 - eps);
    return [=](C x) -> C {
      C z = x;
      if (has_eps) z = z < lo ? lo : (z > hi ? hi : z);
      return std::log(z / (C(1) - z));
    };
  });
}

// threshold(self, threshold, value): x <= threshold ? value : x (self's dtype).
Error threshold(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  const EValue& th = a.at(1);
  const EValue& val = a.at(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  return unary_op(ctx, a, x, out, x->dtype, [&th, &val](auto tag) {
    using C = decltype(tag);
    C t = scalar_to<C>(th), v = scalar_to<C>(val);
    return [=](C e) -> C { return e <= t ? v : e; };
  });
}

// prelu(self, weight): weight has one value or one per channel (dim 1).
Error prelu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* w = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, x) || !require_contiguous(a, w)) return a.error();
  if (!is_floating(x->dtype)) return a.fail("prelu needs a floating tensor"), a.error();
  int64_t channels = x->rank >= 2 ? x->sizes[1] : 1;
  int64_t wn = w->numel();
  if (wn != 1 && wn != channels) return a.fail("prelu weight must have 1 or C elements"), a.error();
  if (!resize_like(a, out, *x)) return a.error();
  int64_t inner = 1;
  for (int d = 2; d < x->rank; ++d) inner *= x->sizes[d];
  int64_t total = x->numel();
  EMBER_DISPATCH_COMPUTE(x->dtype, C, {
    for (int64_t i = 0; i < total; ++i) {
      int64_t c = wn == 1 ? 0 : (i / inner) % channels;
      C v = load_as<C>(x->data, x->dtype, i);
      C s = load_as<C>(w->data, w->dtype, c);
      store_as<C>(out->data, out->dtype, i, v > 0 ? v : s * v);
    }
  });
  return Error::Ok;
}

// glu(self, dim): first half * sigmoid(second half) along dim.
Error glu(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, x)) return a.error();
  dim = wrap_dim(dim, x->rank);
  if (dim < 0 || x->rank == 0) return a.fail("dim out of range"), a.error();
  if (x->sizes[dim] % 2 != 0) return a.fail("glu needs an even size along dim"), a.error();
  Shape s(*x);
  s.d[dim] /= 2;
  if (!resize_to(a, out, s)) return a.error();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= x->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x->rank; ++d) inner *= x->sizes[d];
  int64_t half = s.d[dim];
  EMBER_DISPATCH_COMPUTE(float_compute(x->dtype), C, {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t h = 0; h < half * inner; ++h) {
        int64_t src = o * 2 * half * inner + h;
        C p = load_as<C>(x->data, x->dtype, src);
        C q = load_as<C>(x->data, x->dtype, src + half * inner);
        double sig = 1.0 / (1.0 + std::exp(-static_cast<double>(q)));
        store_as<C>(out->data, out->dtype, o * half * inner + h, static_cast<C>(p * sig));
      }
    }
  });
  return Error::Ok;
}

}  // namespace

#define EMBER_REGISTER_ACT(op, fn)                     \
  EMBER_REGISTER_KERNEL("aten::" op ".default", fn);   \
  EMBER_REGISTER_KERNEL("aten::" op "_.default", fn)
EMBER_REGISTER_ACT("relu", relu);
EMBER_REGISTER_ACT("relu6", relu6);
EMBER_REGISTER_ACT("hardtanh", hardtanh);
EMBER_REGISTER_ACT("hardswish", hardswish);
EMBER_REGISTER_ACT("hardsigmoid", hardsigmoid);
EMBER_REGISTER_ACT("silu", silu);
EMBER_REGISTER_ACT("mish", mish);
EMBER_REGISTER_ACT("selu", selu);
EMBER_REGISTER_ACT("elu", elu);
EMBER_REGISTER_ACT("celu", celu);
EMBER_REGISTER_ACT("leaky_relu", leaky_relu);
EMBER_REGISTER_ACT("gelu", gelu);
EMBER_REGISTER_ACT("logit", logit);
EMBER_REGISTER_ACT("threshold", threshold);
EMBER_REGISTER_ACT("clamp", clamp);
EMBER_REGISTER_ACT("clip", clamp);
EMBER_REGISTER_KERNEL("aten::softplus.default", softplus);
EMBER_REGISTER_KERNEL("aten::hardshrink.default", hardshrink);
EMBER_REGISTER_KERNEL("aten::softshrink.default", softshrink);
EMBER_REGISTER_KERNEL("aten::log_sigmoid.default", log_sigmoid);
EMBER_REGISTER_KERNEL("aten::prelu.default", prelu);
EMBER_REGISTER_KERNEL("aten::_prelu_kernel.default", prelu);
EMBER_REGISTER_KERNEL("aten::glu.default", glu);
EMBER_REGISTER_KERNEL("aten::clamp.Tensor", clamp);
EMBER_REGISTER_KERNEL("aten::clamp_.Tensor", clamp);
EMBER_REGISTER_KERNEL("aten::clip.Tensor", clamp);
EMBER_REGISTER_KERNEL("aten::clamp_min.default", clamp_one<true>);
EMBER_REGISTER_KERNEL("aten::clamp_min.Tensor", clamp_one<true>);
EMBER_REGISTER_KERNEL("aten::clamp_min_.default", clamp_one<true>);
EMBER_REGISTER_KERNEL("aten::clamp_max.default", clamp_one<false>);
EMBER_REGISTER_KERNEL("aten::clamp_max.Tensor", clamp_one<false>);
EMBER_REGISTER_KERNEL("aten::clamp_max_.default", clamp_one<false>);
#undef EMBER_REGISTER_ACT

}  // namespace portable
}  // namespace ember
