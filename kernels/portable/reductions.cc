// Reductions: sum, nansum, mean, nanmean, prod, amax/amin, max/min (.dim values+indices and
// .default), argmax/argmin, aminmax, var/std (+_mean, correction), any/all, logsumexp,
// linalg_vector_norm / norm, count_nonzero. Floats accumulate in double, integers in int64.
#include <cmath>
#include <limits>

#include "kernels/portable/util/elementwise_ops.h"
#include "kernels/portable/util/reduce.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class SumKind { Sum, NanSum, Mean, NanMean, Prod };

// Shared by sum/mean/prod: (self, dims, keepdim, out) after argument parsing.
Error sum_like(KernelContext& ctx, KernelArgs& a, const Tensor* in, Span<const int64_t> dims,
               bool all, bool keepdim, Tensor* out, SumKind kind) {
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  const bool floating = is_floating(out->dtype) || kind == SumKind::Mean || kind == SumKind::NanMean;
  if (floating && in->dtype == ScalarType::Float32 && (kind == SumKind::Sum || kind == SumKind::Mean) &&
      p.n_red <= 1 && (p.n_red == 0 || p.red_strides[0] == 1)) {
    // Contiguous float32 rows (sum/mean over the innermost dims): a tight loop.
    const float* src = static_cast<const float*>(in->data);
    const int64_t len = p.reduce_numel;
    for_each_output(ctx, p, [&](int64_t o) {
      const float* row = src + p.base(o);
      double acc = 0;
      for (int64_t i = 0; i < len; ++i) acc += row[i];
      if (kind == SumKind::Mean) acc = len > 0 ? acc / static_cast<double>(len) : kNaN;
      store_as<double>(out->data, out->dtype, o, acc);
    });
  } else if (floating) {
    for_each_output(ctx, p, [&](int64_t o) {
      double acc = kind == SumKind::Prod ? 1.0 : 0.0;
      int64_t count = 0;
      p.for_each_reduced(p.base(o), [&](int64_t off) {
        double v = load_as<double>(in->data, in->dtype, off);
        if ((kind == SumKind::NanSum || kind == SumKind::NanMean) && std::isnan(v)) return;
        ++count;
        if (kind == SumKind::Prod) acc *= v; else acc += v;
      });
      if (kind == SumKind::Mean || kind == SumKind::NanMean) acc = count > 0 ? acc / count : kNaN;
      store_as<double>(out->data, out->dtype, o, acc);
    });
  } else {
    for_each_output(ctx, p, [&](int64_t o) {
      int64_t acc = kind == SumKind::Prod ? 1 : 0;
      p.for_each_reduced(p.base(o), [&](int64_t off) {
        int64_t v = load_as<int64_t>(in->data, in->dtype, off);
        acc = kind == SumKind::Prod ? wrap_mul(acc, v) : wrap_add(acc, v);
      });
      store_as<int64_t>(out->data, out->dtype, o, acc);
    });
  }
  return Error::Ok;
}

// sum.dim_IntList / mean.dim / nansum / nanmean: (self, dim?, keepdim, dtype?, out)
template <SumKind kKind>
Error sum_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  bool keepdim = a.bool_value(2);
  Tensor* out = a.out(4);
  return sum_like(ctx, a, in, dims, all, keepdim, out, kKind);
}

// sum.default / mean.default / prod.default: (self, dtype?, out)
template <SumKind kKind>
Error sum_all(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(2);
  return sum_like(ctx, a, in, Span<const int64_t>(), true, false, out, kKind);
}

// prod.dim_int: (self, dim, keepdim, dtype?, out)
Error prod_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> dims = a.int_list(1);
  bool keepdim = a.bool_value(2);
  Tensor* out = a.out(4);
  return sum_like(ctx, a, in, dims, false, keepdim, out, SumKind::Prod);
}

// Max/min over the plan with NaN propagation; returns (value, index within the reduction).
template <bool kMax, typename C>
void extreme(const ReducePlan& p, const Tensor* in, int64_t o, C* best, int64_t* best_i) {
  bool first = true;
  int64_t i = 0;
  *best_i = 0;
  p.for_each_reduced(p.base(o), [&](int64_t off) {
    C v = load_as<C>(in->data, in->dtype, off);
    bool take;
    if (first) {
      take = true;
    } else if constexpr (std::is_integral<C>::value) {
      take = kMax ? v > *best : v < *best;
    } else {
      take = !std::isnan(*best) && (std::isnan(v) || (kMax ? v > *best : v < *best));
    }
    if (take) {
      *best = v;
      *best_i = i;
    }
    first = false;
    ++i;
  });
}

// amax/amin(self, dim[], keepdim, out)
template <bool kMax>
Error amax(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  bool keepdim = a.bool_value(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  if (p.reduce_numel == 0 && p.out_numel > 0) return a.fail("cannot reduce over an empty dim"), a.error();
  EMBER_DISPATCH_COMPUTE(in->dtype, C, {
    for_each_output(ctx, p, [&](int64_t o) {
      C best{};
      int64_t bi;
      extreme<kMax, C>(p, in, o, &best, &bi);
      store_as<C>(out->data, out->dtype, o, best);
    });
  });
  return Error::Ok;
}

// max.dim/min.dim(self, dim, keepdim, values, indices); argmax/argmin(self, dim?, keepdim, out);
// max.default/min.default(self, out).
template <bool kMax>
Error extreme_kernel(KernelContext& ctx, KernelArgs& a, const Tensor* in, int64_t dim, bool all,
                     bool keepdim, Tensor* values, Tensor* indices) {
  if (!a.ok()) return a.error();
  ReducePlan p;
  int64_t d[1] = {dim};
  if (!p.init(a, *in, Span<const int64_t>(d, 1), keepdim, all)) return a.error();
  if (values != nullptr && !resize_to(a, values, p.out_shape)) return a.error();
  if (indices != nullptr && !resize_to(a, indices, p.out_shape)) return a.error();
  if (p.reduce_numel == 0 && p.out_numel > 0) return a.fail("cannot reduce over an empty dim"), a.error();
  EMBER_DISPATCH_COMPUTE(in->dtype, C, {
    for_each_output(ctx, p, [&](int64_t o) {
      C best{};
      int64_t bi;
      extreme<kMax, C>(p, in, o, &best, &bi);
      if (values != nullptr) store_as<C>(values->data, values->dtype, o, best);
      if (indices != nullptr) store_as<int64_t>(indices->data, indices->dtype, o, bi);
    });
  });
  return Error::Ok;
}

template <bool kMax>
Error max_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  return extreme_kernel<kMax>(ctx, a, a.tensor(0), a.int_value(1), false, a.bool_value(2), a.out(3), a.out(4));
}

template <bool kMax>
Error max_all(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  return extreme_kernel<kMax>(ctx, a, a.tensor(0), 0, true, false, a.out(1), nullptr);
}

template <bool kMax>
Error argmax(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  bool all = a.is_none(1);
  int64_t dim = a.optional_int(1, 0);
  bool keepdim = a.bool_value(2);
  // argmax over all dims flattens (keepdim gives all-ones dims).
  return extreme_kernel<kMax>(ctx, a, a.tensor(0), dim, all, keepdim, nullptr, a.out(3));
}

// aminmax(self, *, dim?, keepdim, min, max)
Error aminmax(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = a.is_none(1);
  int64_t dim = a.optional_int(1, 0);
  bool keepdim = a.bool_value(2);
  Tensor* mn = a.out(3);
  Tensor* mx = a.out(4);
  EMBER_TRY(extreme_kernel<false>(ctx, a, in, dim, all, keepdim, mn, nullptr));
  return extreme_kernel<true>(ctx, a, in, dim, all, keepdim, mx, nullptr);
}

// var/std family. Arguments differ per overload; parsed into (dims, correction, keepdim).
Error var_core(KernelContext& ctx, KernelArgs& a, const Tensor* in, Span<const int64_t> dims, bool all,
               double correction, bool keepdim, bool take_sqrt, Tensor* out, Tensor* mean_out) {
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  if (mean_out != nullptr && !resize_to(a, mean_out, p.out_shape)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    int64_t base = p.base(o);
    double sum = 0;
    p.for_each_reduced(base, [&](int64_t off) { sum += load_as<double>(in->data, in->dtype, off); });
    double count = static_cast<double>(p.reduce_numel);
    double mean = count > 0 ? sum / count : kNaN;
    double ss = 0;
    p.for_each_reduced(base, [&](int64_t off) {
      double dv = load_as<double>(in->data, in->dtype, off) - mean;
      ss += dv * dv;
    });
    double denom = count - correction;
    double var = ss / (denom > 0 ? denom : 0.0);  // PyTorch divides by max(0, N - correction)
    if (take_sqrt) var = std::sqrt(var);
    store_as<double>(out->data, out->dtype, o, var);
    if (mean_out != nullptr) store_as<double>(mean_out->data, mean_out->dtype, o, mean);
  });
  return Error::Ok;
}

// var.correction / std.correction(self, dim?, *, correction?, keepdim, out)
// var_mean.correction / std_mean.correction(..., out_var, out_mean)
template <bool kSqrt, bool kMean>
Error var_correction(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kMean ? 6 : 5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  double correction = 1;
  a.optional_scalar(2, &correction);
  bool keepdim = a.bool_value(3);
  Tensor* out = a.out(4);
  Tensor* mean_out = kMean ? a.out(5) : nullptr;
  // var_mean returns (var, mean); std_mean returns (std, mean).
  return var_core(ctx, a, in, dims, all, correction, keepdim, kSqrt, out, mean_out);
}

// var.default / std.default(self, unbiased, out); *_mean.default(self, unbiased, var, mean)
template <bool kSqrt, bool kMean>
Error var_default(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kMean ? 4 : 3)) return a.error();
  const Tensor* in = a.tensor(0);
  bool unbiased = a.bool_value(1);
  return var_core(ctx, a, in, Span<const int64_t>(), true, unbiased ? 1 : 0, false, kSqrt, a.out(2),
                  kMean ? a.out(3) : nullptr);
}

// var.dim / std.dim(self, dim?, unbiased, keepdim, out)
// var_mean.dim / std_mean.dim(self, dim?, unbiased, keepdim, out_var, out_mean)
template <bool kSqrt, bool kMean = false>
Error var_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kMean ? 6 : 5)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  bool unbiased = a.bool_value(2);
  bool keepdim = a.bool_value(3);
  return var_core(ctx, a, in, dims, all, unbiased ? 1 : 0, keepdim, kSqrt, a.out(4), kMean ? a.out(5) : nullptr);
}

// any/all: .default(self, out), .dim(self, int dim, keepdim, out), .dims(self, dim?, keepdim, out)
template <bool kAny>
Error any_core(KernelContext& ctx, KernelArgs& a, const Tensor* in, Span<const int64_t> dims, bool all,
               bool keepdim, Tensor* out) {
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    bool r = !kAny;
    p.for_each_reduced(p.base(o), [&](int64_t off) {
      bool v = load_as<bool>(in->data, in->dtype, off);
      if (kAny) r = r || v; else r = r && v;
    });
    store_as<bool>(out->data, out->dtype, o, r);
  });
  return Error::Ok;
}

template <bool kAny>
Error any_all(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  return any_core<kAny>(ctx, a, a.tensor(0), Span<const int64_t>(), true, false, a.out(1));
}

template <bool kAny>
Error any_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  return any_core<kAny>(ctx, a, in, dims, all, a.bool_value(2), a.out(3));
}

// logsumexp(self, dim[], keepdim, out)
Error logsumexp(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  bool keepdim = a.bool_value(2);
  Tensor* out = a.out(3);
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    int64_t base = p.base(o);
    double mx = -kInf;
    p.for_each_reduced(base, [&](int64_t off) {
      double v = load_as<double>(in->data, in->dtype, off);
      if (v > mx || std::isnan(v)) mx = v;
    });
    double r;
    if (std::isinf(mx) || std::isnan(mx)) {
      r = mx == -kInf ? -kInf : mx;
      if (mx == kInf) r = kInf;
    } else {
      double s = 0;
      p.for_each_reduced(base, [&](int64_t off) { s += std::exp(load_as<double>(in->data, in->dtype, off) - mx); });
      r = mx + std::log(s);
    }
    store_as<double>(out->data, out->dtype, o, r);
  });
  return Error::Ok;
}

// Vector p-norm over dims.
Error norm_core(KernelContext& ctx, KernelArgs& a, const Tensor* in, double ord, Span<const int64_t> dims,
                bool all, bool keepdim, Tensor* out) {
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, keepdim, all) || !resize_to(a, out, p.out_shape)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    double acc;
    if (std::isinf(ord)) {
      acc = ord > 0 ? 0 : kInf;
      p.for_each_reduced(p.base(o), [&](int64_t off) {
        double v = std::fabs(load_as<double>(in->data, in->dtype, off));
        if (std::isnan(v)) acc = v;
        else if (!std::isnan(acc) && (ord > 0 ? v > acc : v < acc)) acc = v;
      });
    } else {
      acc = 0;
      p.for_each_reduced(p.base(o), [&](int64_t off) {
        double v = std::fabs(load_as<double>(in->data, in->dtype, off));
        if (ord == 0) acc += v != 0 ? 1 : 0;
        else if (ord == 1) acc += v;
        else if (ord == 2) acc += v * v;
        else acc += std::pow(v, ord);
      });
      if (ord == 2) acc = std::sqrt(acc);
      else if (ord != 0 && ord != 1) acc = std::pow(acc, 1.0 / ord);
    }
    store_as<double>(out->data, out->dtype, o, acc);
  });
  return Error::Ok;
}

// linalg_vector_norm(self, ord, dim?, keepdim, *, dtype?, out)
Error vector_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  double ord = a.scalar(1);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 2, &all);
  bool keepdim = a.bool_value(3);
  return norm_core(ctx, a, in, ord, dims, all, keepdim, a.out(5));
}

// norm.ScalarOpt_dim(self, p?, dim[], keepdim, out) / norm.Scalar(self, p, out) /
// norm.ScalarOpt_dim_dtype(self, p?, dim[], keepdim, *, dtype, out)
Error norm_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 5 && n != 6) return a.expect(5), a.error();
  const Tensor* in = a.tensor(0);
  double ord = 2;
  a.optional_scalar(1, &ord);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 2, &all);
  bool keepdim = a.bool_value(3);
  return norm_core(ctx, a, in, ord, dims, all, keepdim, a.out(n - 1));
}

Error norm_scalar(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  double ord = 2;
  a.optional_scalar(1, &ord);
  return norm_core(ctx, a, a.tensor(0), ord, Span<const int64_t>(), true, false, a.out(2));
}

// count_nonzero.default(self, dim?, out) / count_nonzero.dim_IntList(self, dim[], out)
Error count_nonzero(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  bool all = false;
  Span<const int64_t> dims = reduction_dims(a, 1, &all);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  ReducePlan p;
  if (!p.init(a, *in, dims, false, all) || !resize_to(a, out, p.out_shape)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    int64_t c = 0;
    p.for_each_reduced(p.base(o), [&](int64_t off) { c += load_as<bool>(in->data, in->dtype, off) ? 1 : 0; });
    store_as<int64_t>(out->data, out->dtype, o, c);
  });
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::sum.dim_IntList", sum_dim<SumKind::Sum>);
EMBER_REGISTER_KERNEL("aten::sum.default", sum_all<SumKind::Sum>);
EMBER_REGISTER_KERNEL("aten::nansum.default", sum_dim<SumKind::NanSum>);
EMBER_REGISTER_KERNEL("aten::mean.dim", sum_dim<SumKind::Mean>);
EMBER_REGISTER_KERNEL("aten::mean.default", sum_all<SumKind::Mean>);
EMBER_REGISTER_KERNEL("aten::nanmean.default", sum_dim<SumKind::NanMean>);
EMBER_REGISTER_KERNEL("aten::prod.default", sum_all<SumKind::Prod>);
EMBER_REGISTER_KERNEL("aten::prod.dim_int", prod_dim);
EMBER_REGISTER_KERNEL("aten::amax.default", amax<true>);
EMBER_REGISTER_KERNEL("aten::amin.default", amax<false>);
EMBER_REGISTER_KERNEL("aten::max.dim", max_dim<true>);
EMBER_REGISTER_KERNEL("aten::min.dim", max_dim<false>);
EMBER_REGISTER_KERNEL("aten::max.default", max_all<true>);
EMBER_REGISTER_KERNEL("aten::min.default", max_all<false>);
EMBER_REGISTER_KERNEL("aten::argmax.default", argmax<true>);
EMBER_REGISTER_KERNEL("aten::argmin.default", argmax<false>);
EMBER_REGISTER_KERNEL("aten::aminmax.default", aminmax);
EMBER_REGISTER_KERNEL("aten::var.correction", (var_correction<false, false>));
EMBER_REGISTER_KERNEL("aten::std.correction", (var_correction<true, false>));
EMBER_REGISTER_KERNEL("aten::var_mean.correction", (var_correction<false, true>));
EMBER_REGISTER_KERNEL("aten::std_mean.correction", (var_correction<true, true>));
EMBER_REGISTER_KERNEL("aten::var.default", (var_default<false, false>));
EMBER_REGISTER_KERNEL("aten::std.default", (var_default<true, false>));
EMBER_REGISTER_KERNEL("aten::var_mean.default", (var_default<false, true>));
EMBER_REGISTER_KERNEL("aten::std_mean.default", (var_default<true, true>));
EMBER_REGISTER_KERNEL("aten::var.dim", var_dim<false>);
EMBER_REGISTER_KERNEL("aten::std.dim", var_dim<true>);
EMBER_REGISTER_KERNEL("aten::var_mean.dim", (var_dim<false, true>));
EMBER_REGISTER_KERNEL("aten::std_mean.dim", (var_dim<true, true>));
EMBER_REGISTER_KERNEL("aten::any.default", any_all<true>);
EMBER_REGISTER_KERNEL("aten::all.default", any_all<false>);
EMBER_REGISTER_KERNEL("aten::any.dim", any_dim<true>);
EMBER_REGISTER_KERNEL("aten::all.dim", any_dim<false>);
EMBER_REGISTER_KERNEL("aten::any.dims", any_dim<true>);
EMBER_REGISTER_KERNEL("aten::all.dims", any_dim<false>);
EMBER_REGISTER_KERNEL("aten::logsumexp.default", logsumexp);
EMBER_REGISTER_KERNEL("aten::linalg_vector_norm.default", vector_norm);
EMBER_REGISTER_KERNEL("aten::norm.ScalarOpt_dim", norm_dim);
EMBER_REGISTER_KERNEL("aten::norm.ScalarOpt_dim_dtype", norm_dim);
EMBER_REGISTER_KERNEL("aten::norm.Scalar", norm_scalar);
EMBER_REGISTER_KERNEL("aten::count_nonzero.default", count_nonzero);
EMBER_REGISTER_KERNEL("aten::count_nonzero.dim_IntList", count_nonzero);

}  // namespace portable
}  // namespace ember
