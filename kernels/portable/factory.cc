// Tensor factories and fills: full/full_like/new_full, zeros/ones/empty(+_like, new_*),
// scalar_tensor, arange, linspace/logspace, fill/zero. The output's preallocated dtype is
// the requested dtype (the exporter resolves dtype/layout/device arguments), so those
// arguments are only counted here.
#include <algorithm>
#include <cmath>

#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Fills `out` (already sized) with `value` converted to out's dtype.
void fill_value(Tensor* out, const EValue& value) {
  int64_t total = out->numel();
  if (total == 0) return;
  EMBER_DISPATCH_ALL(out->dtype, T, {
    T v;
    if (value.is_double()) v = convert<T>(value.as_double);
    else if (value.is_bool()) v = convert<T>(value.as_bool);
    else v = convert<T>(value.is_int() ? value.as_int : int64_t{0});
    T* p = static_cast<T*>(out->data);
    for (int64_t i = 0; i < total; ++i) p[i] = v;
  });
}

bool shape_from_list(KernelArgs& a, Span<const int64_t> sizes, Shape& s) {
  if (!a.ok()) return false;
  if (sizes.size() > static_cast<size_t>(kMaxRank)) return a.fail("too many dims");
  s = Shape();
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0) return a.fail("negative size");
    s.push(sizes[i]);
  }
  return true;
}

// full(size[], fill_value, dtype?, layout?, device?, pin_memory?, out)
Error full(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Shape s;
  if (!shape_from_list(a, a.int_list(0), s)) return a.error();
  a.scalar(1);
  Tensor* out = a.out(6);
  if (!resize_to(a, out, s)) return a.error();
  fill_value(out, a.at(1));
  return Error::Ok;
}

// new_full(self, size[], fill_value, dtype?, layout?, device?, pin_memory?, out)
Error new_full(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Shape s;
  if (!shape_from_list(a, a.int_list(1), s)) return a.error();
  a.scalar(2);
  Tensor* out = a.out(7);
  if (!resize_to(a, out, s)) return a.error();
  fill_value(out, a.at(2));
  return Error::Ok;
}

// full_like(self, fill_value, dtype?, layout?, device?, pin_memory?, memory_format?, out)
Error full_like(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  const Tensor* self = a.tensor(0);
  a.scalar(1);
  Tensor* out = a.out(7);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  fill_value(out, a.at(1));
  return Error::Ok;
}

EValue make_int(int64_t v) {
  EValue e;
  e.tag = ValueTag::Int;
  e.as_int = v;
  return e;
}

// zeros/ones/empty(size[], ..., out) with `kArgs` arguments in all; value 0/1.
template <size_t kArgs, int kValue>
Error constant_sized(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kArgs)) return a.error();
  Shape s;
  if (!shape_from_list(a, a.int_list(0), s)) return a.error();
  Tensor* out = a.out(kArgs - 1);
  if (!resize_to(a, out, s)) return a.error();
  fill_value(out, make_int(kValue));
  return Error::Ok;
}

// zeros_like/ones_like/empty_like(self, ..., out)
template <size_t kArgs, int kValue>
Error constant_like(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kArgs)) return a.error();
  const Tensor* self = a.tensor(0);
  Tensor* out = a.out(kArgs - 1);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  fill_value(out, make_int(kValue));
  return Error::Ok;
}

// new_zeros/new_ones/new_empty(self, size[], ..., out)
template <size_t kArgs, int kValue>
Error constant_new(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kArgs)) return a.error();
  Shape s;
  if (!shape_from_list(a, a.int_list(1), s)) return a.error();
  Tensor* out = a.out(kArgs - 1);
  if (!resize_to(a, out, s)) return a.error();
  fill_value(out, make_int(kValue));
  return Error::Ok;
}

// scalar_tensor(s, dtype?, layout?, device?, pin_memory?, out)
Error scalar_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  a.scalar(0);
  Tensor* out = a.out(5);
  if (!resize_to(a, out, Shape())) return a.error();
  fill_value(out, a.at(0));
  return Error::Ok;
}

// arange.default(end, ...6), arange.start(start, end, ...7), arange.start_step(start, end, step, ...8)
Error arange(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 6 && n != 7 && n != 8) return a.expect(8), a.error();
  size_t nscal = n - 5;
  const EValue* start = nullptr;
  const EValue* end = &a.at(0);
  const EValue* step = nullptr;
  if (nscal >= 2) {
    start = &a.at(0);
    end = &a.at(1);
  }
  if (nscal == 3) step = &a.at(2);
  for (size_t i = 0; i < nscal; ++i) a.scalar(i);
  Tensor* out = a.out(n - 1);
  if (!a.ok()) return a.error();
  bool all_int = end->is_int() && (start == nullptr || start->is_int()) && (step == nullptr || step->is_int());
  double ds = start ? start->to_double() : 0, de = end->to_double(), dt = step ? step->to_double() : 1;
  if (dt == 0) return a.fail("arange step must be nonzero"), a.error();
  if ((dt > 0 && de < ds) || (dt < 0 && de > ds)) return a.fail("arange bounds inconsistent with step"), a.error();
  int64_t len;
  if (all_int) {
    int64_t is = start ? start->as_int : 0, ie = end->as_int, it = step ? step->as_int : 1;
    len = it > 0 ? (ie - is + it - 1) / it : (is - ie + (-it) - 1) / (-it);
  } else {
    len = static_cast<int64_t>(std::ceil((de - ds) / dt));
  }
  if (len < 0) len = 0;
  Shape s;
  s.push(len);
  if (!resize_to(a, out, s)) return a.error();
  if (all_int && !is_floating(out->dtype)) {
    int64_t is = start ? start->as_int : 0, it = step ? step->as_int : 1;
    for (int64_t i = 0; i < len; ++i) store_as<int64_t>(out->data, out->dtype, i, is + i * it);
  } else {
    for (int64_t i = 0; i < len; ++i) store_as<double>(out->data, out->dtype, i, ds + static_cast<double>(i) * dt);
  }
  return Error::Ok;
}

// linspace/logspace: (start, end, steps, [base], dtype?, layout?, device?, pin_memory?, out);
// start/end are Scalars (.default) or 0-dim tensors (.Tensor_Tensor etc.).
template <bool kLog>
Error linspace(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const size_t expected = kLog ? 9 : 8;
  if (!a.expect(expected)) return a.error();
  auto scalar_of = [&](size_t i) -> double {
    const EValue& v = a.at(i);
    if (v.is_tensor()) {
      const Tensor* t = a.tensor(i);  // checked: planned, bound, within its capacity
      if (t == nullptr) return 0.0;
      if (t->numel() != 1) return a.fail("start and end tensors must hold one element"), 0.0;
      return load_as<double>(t->data, t->dtype, 0);
    }
    return a.scalar(i);
  };
  double start = scalar_of(0), end = scalar_of(1);
  int64_t steps = a.int_value(2);
  double base = kLog ? a.scalar(3) : 0;
  Tensor* out = a.out(expected - 1);
  if (!a.ok()) return a.error();
  if (steps < 0) return a.fail("steps must be non-negative"), a.error();
  Shape s;
  s.push(steps);
  if (!resize_to(a, out, s)) return a.error();
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0;
  int64_t half = steps / 2;
  for (int64_t i = 0; i < steps; ++i) {
    // Symmetric evaluation like PyTorch: from the start for the first half, from the end after.
    // One step is `start` (PyTorch), not the `end` the second half would give.
    double v = i < half || steps == 1 ? start + step * static_cast<double>(i)
                                      : end - step * static_cast<double>(steps - 1 - i);
    if (kLog) v = std::pow(base, v);
    if (!is_floating(out->dtype) && !kLog) v = std::trunc(v);
    store_as<double>(out->data, out->dtype, i, v);
  }
  return Error::Ok;
}

// fill.Scalar(self, value, out) / fill.Tensor(self, value, out) / zero(self, out)
Error fill(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* self = a.tensor(0);
  Tensor* out = a.out(2);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  const EValue& v = a.at(1);
  if (v.is_tensor()) {
    const Tensor* t = v.as_tensor;
    if (t->numel() != 1) return a.fail("fill value tensor must have one element"), a.error();
    EValue d;
    if (is_floating(t->dtype)) {
      d.tag = ValueTag::Double;
      d.as_double = load_as<double>(t->data, t->dtype, 0);
    } else {
      d.tag = ValueTag::Int;
      d.as_int = load_as<int64_t>(t->data, t->dtype, 0);
    }
    fill_value(out, d);
    return Error::Ok;
  }
  a.scalar(1);
  if (!a.ok()) return a.error();
  fill_value(out, v);
  return Error::Ok;
}

// eye(n, dtype?, layout?, device?, pin_memory?, out) / eye.m(n, m, ...): the [n, m] identity.
template <bool kM>
Error eye(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const size_t expected = kM ? 7 : 6;
  if (!a.expect(expected)) return a.error();
  const int64_t rows = a.int_value(0), cols = kM ? a.int_value(1) : rows;
  Tensor* out = a.out(expected - 1);
  if (!a.ok()) return a.error();
  if (rows < 0 || cols < 0) return a.fail("eye: n and m must be non-negative"), a.error();
  Shape s;
  s.push(rows);
  s.push(cols);
  if (!resize_to(a, out, s)) return a.error();
  fill_value(out, make_int(0));
  for (int64_t i = 0; i < std::min(rows, cols); ++i) store_as<double>(out->data, out->dtype, i * cols + i, 1.0);
  return Error::Ok;
}

Error zero(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* self = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok() || !resize_like(a, out, *self)) return a.error();
  fill_value(out, make_int(0));
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::full.default", full);
EMBER_REGISTER_KERNEL("aten::new_full.default", new_full);
EMBER_REGISTER_KERNEL("aten::full_like.default", full_like);
EMBER_REGISTER_KERNEL("aten::zeros.default", (constant_sized<6, 0>));
EMBER_REGISTER_KERNEL("aten::ones.default", (constant_sized<6, 1>));
EMBER_REGISTER_KERNEL("aten::empty.memory_format", (constant_sized<7, 0>));
EMBER_REGISTER_KERNEL("aten::empty_permuted.default", (constant_sized<7, 0>));
EMBER_REGISTER_KERNEL("aten::empty_strided.default", (constant_sized<7, 0>));
EMBER_REGISTER_KERNEL("aten::zeros_like.default", (constant_like<7, 0>));
EMBER_REGISTER_KERNEL("aten::ones_like.default", (constant_like<7, 1>));
EMBER_REGISTER_KERNEL("aten::empty_like.default", (constant_like<7, 0>));
EMBER_REGISTER_KERNEL("aten::new_zeros.default", (constant_new<7, 0>));
EMBER_REGISTER_KERNEL("aten::new_ones.default", (constant_new<7, 1>));
EMBER_REGISTER_KERNEL("aten::new_empty.default", (constant_new<7, 0>));
EMBER_REGISTER_KERNEL("aten::new_empty_strided.default", (constant_new<8, 0>));
EMBER_REGISTER_KERNEL("aten::scalar_tensor.default", scalar_tensor);
EMBER_REGISTER_KERNEL("aten::arange.default", arange);
EMBER_REGISTER_KERNEL("aten::arange.start", arange);
EMBER_REGISTER_KERNEL("aten::arange.start_step", arange);
EMBER_REGISTER_KERNEL("aten::linspace.default", linspace<false>);
EMBER_REGISTER_KERNEL("aten::linspace.Tensor_Tensor", linspace<false>);
EMBER_REGISTER_KERNEL("aten::linspace.Tensor_Scalar", linspace<false>);
EMBER_REGISTER_KERNEL("aten::linspace.Scalar_Tensor", linspace<false>);
EMBER_REGISTER_KERNEL("aten::logspace.default", linspace<true>);
EMBER_REGISTER_KERNEL("aten::logspace.Tensor_Tensor", linspace<true>);
EMBER_REGISTER_KERNEL("aten::logspace.Tensor_Scalar", linspace<true>);
EMBER_REGISTER_KERNEL("aten::logspace.Scalar_Tensor", linspace<true>);
EMBER_REGISTER_KERNEL("aten::fill.Scalar", fill);
EMBER_REGISTER_KERNEL("aten::fill.Tensor", fill);
EMBER_REGISTER_KERNEL("aten::fill_.Scalar", fill);
EMBER_REGISTER_KERNEL("aten::fill_.Tensor", fill);
EMBER_REGISTER_KERNEL("aten::zero.default", zero);
EMBER_REGISTER_KERNEL("aten::eye.default", eye<false>);
EMBER_REGISTER_KERNEL("aten::eye.m", eye<true>);
EMBER_REGISTER_KERNEL("aten::zero_.default", zero);

}  // namespace portable
}  // namespace ember
