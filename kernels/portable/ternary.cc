// Three-operand elementwise ops: where (self/ScalarSelf/ScalarOther/Scalar), masked_fill
// (Scalar/Tensor value), lerp (Scalar/Tensor weight), addcmul, addcdiv.
#include <cmath>

#include "kernels/portable/util/binary_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Typed select loop: out = cond ? x : y, all of storage type T, cond 1-byte bool/uint8.
template <typename T>
void select_loop(KernelContext& ctx, const Tensor* const (&ins)[3], Tensor& out) {
  BroadcastPlan<3> plan;
  plan.init(ins, out);
  const uint8_t* c = static_cast<const uint8_t*>(ins[0]->data);
  const T* x = static_cast<const T*>(ins[1]->data);
  const T* y = static_cast<const T*>(ins[2]->data);
  T* o = static_cast<T*>(out.data);
  parallel_for_range(ctx, out.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    plan.for_runs(begin, end, [&](const int64_t* off, const int64_t* inner, int64_t cnt) {
      for (int64_t j = 0; j < cnt; ++j) {
        o[off[3] + j * inner[3]] =
            c[off[0] + j * inner[0]] ? x[off[1] + j * inner[1]] : y[off[2] + j * inner[2]];
      }
    });
  });
}

// where(condition, self, other, out); self/other may be scalars.
Error where(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* cond = a.tensor(0);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  Operand x(a.at(1)), y(a.at(2));
  if (!x.valid() || !y.valid()) return a.fail("expected tensor or scalar operands"), a.error();
  ResultType rt;
  x.add_to(rt);
  y.add_to(rt);
  ScalarType common = rt.get();
  const Tensor* ins[3] = {cond, x.tensor(), y.tensor()};
  if (!resize_broadcast(a, ins, out)) return a.error();
  if (out->numel() == 0) return Error::Ok;
  bool byte_cond = cond->dtype == ScalarType::Bool || cond->dtype == ScalarType::UInt8;
  if (byte_cond && x.tensor()->dtype == out->dtype && y.tensor()->dtype == out->dtype) {
    EMBER_DISPATCH_ALL(out->dtype, T, select_loop<T>(ctx, ins, *out));
    return Error::Ok;
  }
  EMBER_DISPATCH_COMPUTE(common, C, {
    map_elementwise<C, C, 3>(ctx, ins, *out, [](C c, C p, C q) -> C { return c != 0 ? p : q; });
  });
  return Error::Ok;
}

// masked_fill(self, mask, value, out): value is a Scalar or a 0-dim tensor.
Error masked_fill(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* mask = a.tensor(1);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  Operand value(a.at(2));
  if (!value.valid() || value.tensor()->numel() != 1) {
    return a.fail("masked_fill value must be a scalar or a one-element tensor"), a.error();
  }
  Shape s;
  if (!broadcast_shapes(Shape(*self), Shape(*mask), s) || s.rank != self->rank ||
      s.numel() != self->numel()) {
    return a.fail("mask does not broadcast to self"), a.error();
  }
  const Tensor* ins[3] = {mask, self, value.tensor()};
  if (!require_contiguous(a, self) || !require_contiguous(a, mask) || !resize_like(a, out, *self)) {
    return a.error();
  }
  if (out->numel() == 0) return Error::Ok;
  EMBER_DISPATCH_COMPUTE(self->dtype, C, {
    map_elementwise<C, C, 3>(ctx, ins, *out, [](C m, C p, C v) -> C { return m != 0 ? v : p; });
  });
  return Error::Ok;
}

// lerp(self, end, weight, out); weight Scalar or Tensor.
Error lerp(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* end = a.tensor(1);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  Operand w(a.at(2));
  if (!w.valid()) return a.fail("weight must be a scalar or tensor"), a.error();
  ScalarType compute = float_compute(result_type(*self, *end));
  return ternary_op(ctx, a, self, end, w.tensor(), out, compute, [](auto tag) {
    using C = decltype(tag);
    return [](C s, C e, C wt) -> C {
      if constexpr (std::is_integral<C>::value) {
        return s;
      } else {
        return std::fabs(wt) < C(0.5) ? s + wt * (e - s) : e - (e - s) * (C(1) - wt);
      }
    };
  });
}

// addcmul / addcdiv(self, tensor1, tensor2, *, value, out)
template <bool kDiv>
Error addc(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* t1 = a.tensor(1);
  const Tensor* t2 = a.tensor(2);
  const EValue& value = a.at(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  ResultType rt;
  rt.add_tensor(*self);
  rt.add_tensor(*t1);
  rt.add_tensor(*t2);
  ScalarType compute = kDiv ? float_compute(rt.get()) : rt.get();
  return ternary_op(ctx, a, self, t1, t2, out, compute, [&value](auto tag) {
    using C = decltype(tag);
    C v = scalar_to<C>(value);
    return [v](C s, C p, C q) -> C {
      if constexpr (kDiv) {
        if constexpr (std::is_integral<C>::value) return add_op(s, mul_op(v, safe_div_trunc(p, q)));
        else return s + v * (p / q);
      } else {
        return add_op(s, mul_op(v, mul_op(p, q)));
      }
    };
  });
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::where.self", where);
EMBER_REGISTER_KERNEL("aten::where.ScalarSelf", where);
EMBER_REGISTER_KERNEL("aten::where.ScalarOther", where);
EMBER_REGISTER_KERNEL("aten::where.Scalar", where);
EMBER_REGISTER_KERNEL("aten::masked_fill.Scalar", masked_fill);
EMBER_REGISTER_KERNEL("aten::masked_fill.Tensor", masked_fill);
EMBER_REGISTER_KERNEL("aten::masked_fill_.Scalar", masked_fill);
EMBER_REGISTER_KERNEL("aten::masked_fill_.Tensor", masked_fill);
EMBER_REGISTER_KERNEL("aten::lerp.Scalar", lerp);
EMBER_REGISTER_KERNEL("aten::lerp.Tensor", lerp);
EMBER_REGISTER_KERNEL("aten::addcmul.default", addc<false>);
EMBER_REGISTER_KERNEL("aten::addcdiv.default", addc<true>);

}  // namespace portable
}  // namespace ember
