// Symbolic-size and scalar ops whose outputs are Int/Double/Bool values: sym_size.int,
// sym_numel, sym_stride.int, sym_storage_offset, _local_scalar_dense, the Python operator
// targets (_operator::add/sub/mul/floordiv/mod/truediv/pow/neg/eq/ne/lt/le/gt/ge/and_/or_/
// not_), runtime assertions (_assert_scalar, _assert_tensor_metadata, sym_constrain_range*)
// and inference-mode dropout.
#include <cmath>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

void set_int(EValue& v, int64_t x) {
  v.tag = ValueTag::Int;
  v.as_int = x;
}
void set_double(EValue& v, double x) {
  v.tag = ValueTag::Double;
  v.as_double = x;
}
void set_bool(EValue& v, bool x) {
  v.tag = ValueTag::Bool;
  v.as_bool = x;
}

// sym_size.int(self, dim, out)
Error sym_size(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* t = a.tensor(0);
  int64_t dim = a.int_value(1);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, t->rank);
  if (dim < 0 || t->rank == 0) return a.fail("dim out of range"), a.error();
  set_int(a.at(2), t->sizes[dim]);
  return Error::Ok;
}

// sym_stride.int(self, dim, out)
Error sym_stride(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* t = a.tensor(0);
  int64_t dim = a.int_value(1);
  if (!a.ok()) return a.error();
  dim = wrap_dim(dim, t->rank);
  if (dim < 0 || t->rank == 0) return a.fail("dim out of range"), a.error();
  int64_t strides[kMaxRank];
  contiguous_strides(t->sizes, t->rank, strides);
  set_int(a.at(2), strides[dim]);
  return Error::Ok;
}

// sym_numel(self, out) / sym_storage_offset(self, out)
template <bool kNumel>
Error sym_numel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* t = a.tensor(0);
  if (!a.ok()) return a.error();
  set_int(a.at(1), kNumel ? t->numel() : 0);
  return Error::Ok;
}

// _local_scalar_dense(self, out): the single element as an Int/Double/Bool value.
Error local_scalar(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* t = a.tensor(0);
  if (!a.ok()) return a.error();
  if (t->numel() != 1) return a.fail("tensor must have exactly one element"), a.error();
  if (t->dtype == ScalarType::Bool) set_bool(a.at(1), load_as<bool>(t->data, t->dtype, 0));
  else if (is_floating(t->dtype)) set_double(a.at(1), load_as<double>(t->data, t->dtype, 0));
  else set_int(a.at(1), load_as<int64_t>(t->data, t->dtype, 0));
  return Error::Ok;
}

enum class PyOp { Add, Sub, Mul, FloorDiv, Mod, TrueDiv, Pow, Eq, Ne, Lt, Le, Gt, Ge, And, Or };

bool is_number(const EValue& v) { return v.is_int() || v.is_double() || v.is_bool(); }

// _operator::<op>.default(a, b, out): Python semantics on ints (floor division/modulo),
// floats when either side is a float.
template <PyOp kOp>
Error py_binary(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const EValue& x = a.at(0);
  const EValue& y = a.at(1);
  EValue& out = a.at(2);
  if (!is_number(x) || !is_number(y)) return a.fail("expected int, float or bool operands"), a.error();
  bool ints = !x.is_double() && !y.is_double();
  if (ints) {
    int64_t p = x.is_bool() ? x.as_bool : x.as_int, q = y.is_bool() ? y.as_bool : y.as_int;
    switch (kOp) {
      case PyOp::Add: set_int(out, wrap_add(p, q)); return Error::Ok;
      case PyOp::Sub: set_int(out, wrap_sub(p, q)); return Error::Ok;
      case PyOp::Mul: set_int(out, wrap_mul(p, q)); return Error::Ok;
      case PyOp::FloorDiv:
        if (q == 0) return a.fail("integer division by zero"), a.error();
        set_int(out, safe_div_floor(p, q));
        return Error::Ok;
      case PyOp::Mod:
        if (q == 0) return a.fail("integer modulo by zero"), a.error();
        set_int(out, safe_mod_floor(p, q));
        return Error::Ok;
      case PyOp::TrueDiv:
        if (q == 0) return a.fail("division by zero"), a.error();
        set_double(out, static_cast<double>(p) / static_cast<double>(q));
        return Error::Ok;
      case PyOp::Pow:
        if (q >= 0) {
          int64_t r = 1, b = p, e = q;
          while (e > 0) {
            if (e & 1) r = wrap_mul(r, b);
            b = wrap_mul(b, b);
            e >>= 1;
          }
          set_int(out, r);
        } else {
          set_double(out, std::pow(static_cast<double>(p), static_cast<double>(q)));
        }
        return Error::Ok;
      case PyOp::Eq: set_bool(out, p == q); return Error::Ok;
      case PyOp::Ne: set_bool(out, p != q); return Error::Ok;
      case PyOp::Lt: set_bool(out, p < q); return Error::Ok;
      case PyOp::Le: set_bool(out, p <= q); return Error::Ok;
      case PyOp::Gt: set_bool(out, p > q); return Error::Ok;
      case PyOp::Ge: set_bool(out, p >= q); return Error::Ok;
      case PyOp::And:
        if (x.is_bool() && y.is_bool()) set_bool(out, p && q); else set_int(out, p & q);
        return Error::Ok;
      case PyOp::Or:
        if (x.is_bool() && y.is_bool()) set_bool(out, p || q); else set_int(out, p | q);
        return Error::Ok;
    }
  }
  double p = x.to_double(), q = y.to_double();
  switch (kOp) {
    case PyOp::Add: set_double(out, p + q); break;
    case PyOp::Sub: set_double(out, p - q); break;
    case PyOp::Mul: set_double(out, p * q); break;
    case PyOp::FloorDiv:
      if (q == 0) return a.fail("float floor division by zero"), a.error();
      set_double(out, float_div_floor(p, q));
      break;
    case PyOp::Mod:
      if (q == 0) return a.fail("float modulo by zero"), a.error();
      set_double(out, float_mod_floor(p, q));
      break;
    case PyOp::TrueDiv:
      if (q == 0) return a.fail("float division by zero"), a.error();
      set_double(out, p / q);
      break;
    case PyOp::Pow: set_double(out, std::pow(p, q)); break;
    case PyOp::Eq: set_bool(out, p == q); break;
    case PyOp::Ne: set_bool(out, p != q); break;
    case PyOp::Lt: set_bool(out, p < q); break;
    case PyOp::Le: set_bool(out, p <= q); break;
    case PyOp::Gt: set_bool(out, p > q); break;
    case PyOp::Ge: set_bool(out, p >= q); break;
    case PyOp::And:
    case PyOp::Or: return a.fail("bitwise ops need ints"), a.error();
  }
  return Error::Ok;
}

// _operator::neg.default(a, out) / _operator::not_.default(a, out) / pos / abs
template <int kWhich>
Error py_unary(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const EValue& x = a.at(0);
  EValue& out = a.at(1);
  if (!is_number(x)) return a.fail("expected a number"), a.error();
  if (kWhich == 1) {  // not_
    set_bool(out, x.to_double() == 0);
    return Error::Ok;
  }
  if (x.is_double()) {
    double v = x.as_double;
    set_double(out, kWhich == 0 ? -v : kWhich == 2 ? v : std::fabs(v));
  } else {
    int64_t v = x.is_bool() ? x.as_bool : x.as_int;
    set_int(out, kWhich == 0 ? wrap_sub(0, v) : kWhich == 2 ? v : (v < 0 ? wrap_sub(0, v) : v));
  }
  return Error::Ok;
}

// sym_sum / sym_max / sym_min / sym_float / sym_int helpers used by dynamic shapes.
template <int kWhich>
Error sym_minmax(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const EValue& x = a.at(0);
  const EValue& y = a.at(1);
  if (!is_number(x) || !is_number(y)) return a.fail("expected numbers"), a.error();
  if (x.is_double() || y.is_double()) {
    double p = x.to_double(), q = y.to_double();
    set_double(a.at(2), kWhich == 0 ? (p > q ? p : q) : (p < q ? p : q));
  } else {
    int64_t p = x.is_bool() ? x.as_bool : x.as_int, q = y.is_bool() ? y.as_bool : y.as_int;
    set_int(a.at(2), kWhich == 0 ? (p > q ? p : q) : (p < q ? p : q));
  }
  return Error::Ok;
}

// _assert_scalar(self, assert_msg): fails when self is false/zero.
Error assert_scalar(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const EValue& v = a.at(0);
  if (!is_number(v)) return a.fail("expected a scalar condition"), a.error();
  if (v.to_double() == 0) return a.fail("runtime assertion failed", Error::InvalidState), a.error();
  return Error::Ok;
}

// _assert_async.msg(self, assert_msg) / _assert_async.default(self)
Error assert_async(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 1 && n != 2) return a.expect(2), a.error();
  const Tensor* t = a.tensor(0);
  if (!a.ok()) return a.error();
  if (t->numel() != 1) return a.fail("assertion tensor must have one element"), a.error();
  if (!load_as<bool>(t->data, t->dtype, 0)) return a.fail("runtime assertion failed", Error::InvalidState), a.error();
  return Error::Ok;
}

// Checks that are compile-time facts for the exporter: nothing to do at run time.
Error no_op(KernelContext&, EValue**, size_t) { return Error::Ok; }

// dropout(input, p, train, out) and friends: identity in inference (train=False or p=0).
Error dropout(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  double p = a.scalar(1);
  bool train = a.bool_value(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  if (train && p != 0) {
    return a.fail("training-mode dropout needs random numbers; export in eval mode", Error::NotSupported),
           a.error();
  }
  if (!require_contiguous(a, in) || !resize_like(a, out, *in)) return a.error();
  copy_convert(in->data, in->dtype, out->data, out->dtype, in->numel());
  return Error::Ok;
}

// native_dropout(input, p, train?, out, mask): identity with an all-true mask in eval.
Error native_dropout(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  double p = a.scalar(1);
  bool train = a.is_none(2) ? true : a.bool_value(2);
  Tensor* out = a.out(3);
  Tensor* mask = a.out(4);
  if (!a.ok()) return a.error();
  if (train && p != 0) {
    return a.fail("training-mode dropout needs random numbers; export in eval mode", Error::NotSupported),
           a.error();
  }
  if (!require_contiguous(a, in) || !resize_like(a, out, *in) || !resize_like(a, mask, *in)) return a.error();
  copy_convert(in->data, in->dtype, out->data, out->dtype, in->numel());
  for (int64_t i = 0; i < mask->numel(); ++i) store_as<int64_t>(mask->data, mask->dtype, i, 1);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::sym_size.int", sym_size);
EMBER_REGISTER_KERNEL("aten::sym_stride.int", sym_stride);
EMBER_REGISTER_KERNEL("aten::sym_numel.default", sym_numel<true>);
EMBER_REGISTER_KERNEL("aten::sym_storage_offset.default", sym_numel<false>);
EMBER_REGISTER_KERNEL("aten::_local_scalar_dense.default", local_scalar);
EMBER_REGISTER_KERNEL("aten::item.default", local_scalar);
EMBER_REGISTER_KERNEL("_operator::add.default", py_binary<PyOp::Add>);
EMBER_REGISTER_KERNEL("_operator::sub.default", py_binary<PyOp::Sub>);
EMBER_REGISTER_KERNEL("_operator::mul.default", py_binary<PyOp::Mul>);
EMBER_REGISTER_KERNEL("_operator::floordiv.default", py_binary<PyOp::FloorDiv>);
EMBER_REGISTER_KERNEL("_operator::mod.default", py_binary<PyOp::Mod>);
EMBER_REGISTER_KERNEL("_operator::truediv.default", py_binary<PyOp::TrueDiv>);
EMBER_REGISTER_KERNEL("_operator::pow.default", py_binary<PyOp::Pow>);
EMBER_REGISTER_KERNEL("_operator::eq.default", py_binary<PyOp::Eq>);
EMBER_REGISTER_KERNEL("_operator::ne.default", py_binary<PyOp::Ne>);
EMBER_REGISTER_KERNEL("_operator::lt.default", py_binary<PyOp::Lt>);
EMBER_REGISTER_KERNEL("_operator::le.default", py_binary<PyOp::Le>);
EMBER_REGISTER_KERNEL("_operator::gt.default", py_binary<PyOp::Gt>);
EMBER_REGISTER_KERNEL("_operator::ge.default", py_binary<PyOp::Ge>);
EMBER_REGISTER_KERNEL("_operator::and_.default", py_binary<PyOp::And>);
EMBER_REGISTER_KERNEL("_operator::or_.default", py_binary<PyOp::Or>);
EMBER_REGISTER_KERNEL("_operator::neg.default", py_unary<0>);
EMBER_REGISTER_KERNEL("_operator::not_.default", py_unary<1>);
EMBER_REGISTER_KERNEL("_operator::pos.default", py_unary<2>);
EMBER_REGISTER_KERNEL("_operator::abs.default", py_unary<3>);
EMBER_REGISTER_KERNEL("torch::sym_max.default", sym_minmax<0>);
EMBER_REGISTER_KERNEL("torch::sym_min.default", sym_minmax<1>);
EMBER_REGISTER_KERNEL("aten::_assert_scalar.default", assert_scalar);
EMBER_REGISTER_KERNEL("aten::_assert_async.msg", assert_async);
EMBER_REGISTER_KERNEL("aten::_assert_async.default", assert_async);
EMBER_REGISTER_KERNEL("aten::_assert_tensor_metadata.default", no_op);
EMBER_REGISTER_KERNEL("aten::sym_constrain_range.default", no_op);
EMBER_REGISTER_KERNEL("aten::sym_constrain_range_for_size.default", no_op);
EMBER_REGISTER_KERNEL("aten::dropout.default", dropout);
EMBER_REGISTER_KERNEL("aten::dropout_.default", dropout);
EMBER_REGISTER_KERNEL("aten::feature_dropout.default", dropout);
EMBER_REGISTER_KERNEL("aten::feature_dropout_.default", dropout);
EMBER_REGISTER_KERNEL("aten::alpha_dropout.default", dropout);
EMBER_REGISTER_KERNEL("aten::alpha_dropout_.default", dropout);
EMBER_REGISTER_KERNEL("aten::feature_alpha_dropout.default", dropout);
EMBER_REGISTER_KERNEL("aten::native_dropout.default", native_dropout);

}  // namespace portable
}  // namespace ember
