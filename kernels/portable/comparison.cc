// Comparisons (eq/ne/lt/le/gt/ge, Tensor and Scalar overloads), logical and/or/xor,
// bitwise and/or/xor/shifts (+ the __and__ style aliases) and isclose.
#include <cmath>

#include "kernels/portable/util/binary_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };

template <Cmp kCmp>
Error compare(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> bool {
      switch (kCmp) {
        case Cmp::Eq: return x == y;
        case Cmp::Ne: return x != y;
        case Cmp::Lt: return x < y;
        case Cmp::Le: return x <= y;
        case Cmp::Gt: return x > y;
        case Cmp::Ge: return x >= y;
      }
      return false;
    };
  });
}

enum class Logic { And, Or, Xor };

template <Logic kOp>
Error logical(KernelContext& ctx, EValue** args, size_t n) {
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> bool {
      bool a = x != 0, b = y != 0;
      return kOp == Logic::And ? (a && b) : kOp == Logic::Or ? (a || b) : (a != b);
    };
  });
}

enum class Bit { And, Or, Xor, Shl, Shr };

template <Bit kOp>
Error bitwise(KernelContext& ctx, EValue** args, size_t n) {
  if (n == 3) {
    for (size_t i = 0; i < 2; ++i) {
      const EValue& v = *args[i];
      bool floating = v.is_tensor() ? (v.as_tensor != nullptr && is_floating(v.as_tensor->dtype))
                                    : v.is_double();
      if (floating) return ctx.fail(Error::InvalidArgument, "bitwise ops need integer or bool operands");
    }
  }
  return binary_entry(ctx, args, n, 3, Promote::Common, [](auto tag) {
    using C = decltype(tag);
    return [](C x, C y) -> C {
      if constexpr (std::is_integral<C>::value) {
        switch (kOp) {
          case Bit::And: return x & y;
          case Bit::Or: return x | y;
          case Bit::Xor: return x ^ y;
          case Bit::Shl:
            return (y < 0 || y >= 64) ? 0 : static_cast<int64_t>(static_cast<uint64_t>(x) << y);
          case Bit::Shr: return (y < 0 || y >= 64) ? (x < 0 ? -1 : 0) : (x >> y);
        }
      }
      return x;
    };
  });
}

// isclose(self, other, rtol, atol, equal_nan, out)
Error isclose(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* y = a.tensor(1);
  double rtol = a.scalar(2), atol = a.scalar(3);
  bool equal_nan = a.bool_value(4);
  Tensor* out = a.out(5);
  if (!a.ok()) return a.error();
  return binary_op(ctx, a, x, y, out, result_type(*x, *y), [=](auto tag) {
    using C = decltype(tag);
    return [=](C p, C q) -> bool {
      if (p == q) return true;
      if constexpr (std::is_integral<C>::value) {
        double d = std::fabs(static_cast<double>(p) - static_cast<double>(q));
        return d <= atol + rtol * std::fabs(static_cast<double>(q));
      } else {
        if (std::isnan(p) || std::isnan(q)) return equal_nan && std::isnan(p) && std::isnan(q);
        if (std::isinf(p) || std::isinf(q)) return false;
        double d = std::fabs(static_cast<double>(p) - static_cast<double>(q));
        return d <= atol + rtol * std::fabs(static_cast<double>(q));
      }
    };
  });
}

}  // namespace

#define EMBER_REGISTER_CMP(op, kind)                                    \
  EMBER_REGISTER_KERNEL("aten::" op ".Tensor", compare<Cmp::kind>);     \
  EMBER_REGISTER_KERNEL("aten::" op ".Scalar", compare<Cmp::kind>)
EMBER_REGISTER_CMP("eq", Eq);
EMBER_REGISTER_CMP("ne", Ne);
EMBER_REGISTER_CMP("lt", Lt);
EMBER_REGISTER_CMP("le", Le);
EMBER_REGISTER_CMP("gt", Gt);
EMBER_REGISTER_CMP("ge", Ge);
EMBER_REGISTER_CMP("less", Lt);
EMBER_REGISTER_CMP("less_equal", Le);
EMBER_REGISTER_CMP("greater", Gt);
EMBER_REGISTER_CMP("greater_equal", Ge);
EMBER_REGISTER_CMP("not_equal", Ne);
#undef EMBER_REGISTER_CMP

EMBER_REGISTER_KERNEL("aten::logical_and.default", logical<Logic::And>);
EMBER_REGISTER_KERNEL("aten::logical_or.default", logical<Logic::Or>);
EMBER_REGISTER_KERNEL("aten::logical_xor.default", logical<Logic::Xor>);

#define EMBER_REGISTER_BIT(op, kind)                                    \
  EMBER_REGISTER_KERNEL("aten::" op ".Tensor", bitwise<Bit::kind>);     \
  EMBER_REGISTER_KERNEL("aten::" op ".Scalar", bitwise<Bit::kind>)
EMBER_REGISTER_BIT("bitwise_and", And);
EMBER_REGISTER_BIT("bitwise_or", Or);
EMBER_REGISTER_BIT("bitwise_xor", Xor);
EMBER_REGISTER_BIT("__and__", And);
EMBER_REGISTER_BIT("__or__", Or);
EMBER_REGISTER_BIT("__xor__", Xor);
// PyTorch names the scalar overloads of the shift functions Tensor_Scalar (not Scalar).
EMBER_REGISTER_KERNEL("aten::bitwise_left_shift.Tensor", bitwise<Bit::Shl>);
EMBER_REGISTER_KERNEL("aten::bitwise_left_shift.Tensor_Scalar", bitwise<Bit::Shl>);
EMBER_REGISTER_KERNEL("aten::bitwise_right_shift.Tensor", bitwise<Bit::Shr>);
EMBER_REGISTER_KERNEL("aten::bitwise_right_shift.Tensor_Scalar", bitwise<Bit::Shr>);
EMBER_REGISTER_BIT("__lshift__", Shl);
EMBER_REGISTER_BIT("__rshift__", Shr);
#undef EMBER_REGISTER_BIT
EMBER_REGISTER_KERNEL("aten::bitwise_and_.Tensor", bitwise<Bit::And>);
EMBER_REGISTER_KERNEL("aten::bitwise_or_.Tensor", bitwise<Bit::Or>);
EMBER_REGISTER_KERNEL("aten::isclose.default", isclose);

}  // namespace portable
}  // namespace ember
