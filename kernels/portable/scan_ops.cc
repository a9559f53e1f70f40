// Ops along one dim: cumsum, cumprod, logcumsumexp, cummax/cummin (values+indices),
// diff, repeat_interleave, sort/argsort/msort, topk, kthvalue, median/nanmedian (.default
// and .dim), quantile/nanquantile. Sorting is an in-place insertion/heap-free merge over the
// output buffers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Splits a contiguous tensor around `dim` into outer x size x inner.
struct DimSplit {
  int64_t outer = 1, size = 1, inner = 1;
  bool init(KernelArgs& a, const Tensor& t, int64_t& dim) {
    if (!require_contiguous(a, &t)) return false;
    dim = wrap_dim(dim, t.rank);
    if (dim < 0) return a.fail("dim out of range");
    if (t.rank == 0) return true;
    for (int d = 0; d < dim; ++d) outer *= t.sizes[d];
    size = t.sizes[dim];
    for (int d = static_cast<int>(dim) + 1; d < t.rank; ++d) inner *= t.sizes[d];
    return true;
  }
  int64_t at(int64_t o, int64_t i, int64_t k) const { return (o * size + k) * inner + i; }
};

enum class Scan { Sum, Prod, LogSumExp };

// cumsum/cumprod(self, dim, dtype?, out); logcumsumexp(self, dim, out)
template <Scan kScan>
Error scan(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const size_t expected = kScan == Scan::LogSumExp ? 3 : 4;
  if (!a.expect(expected)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* out = a.out(expected - 1);
  if (!a.ok()) return a.error();
  DimSplit s;
  if (!s.init(a, *in, dim) || !resize_like(a, out, *in)) return a.error();
  ScalarType compute = is_floating(out->dtype) ? out->dtype : ScalarType::Int64;
  if (kScan == Scan::LogSumExp) compute = float_compute(out->dtype);
  EMBER_DISPATCH_COMPUTE(compute, C, {
    using A = typename std::conditional<std::is_integral<C>::value, int64_t, double>::type;
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        A acc = kScan == Scan::Prod ? A(1) : A(0);
        if constexpr (kScan == Scan::LogSumExp && !std::is_integral<A>::value) {
          acc = -std::numeric_limits<A>::infinity();
        }
        for (int64_t k = 0; k < s.size; ++k) {
          int64_t e = s.at(o, i, k);
          A v = load_as<A>(in->data, in->dtype, e);
          if constexpr (kScan == Scan::Sum) {
            acc = add_op(acc, v);
          } else if constexpr (kScan == Scan::Prod) {
            acc = mul_op(acc, v);
          } else if constexpr (!std::is_integral<A>::value) {
            A m = acc > v ? acc : v;
            if (std::isinf(m) && m < 0) acc = m;
            else acc = m + std::log(std::exp(acc - m) + std::exp(v - m));
          }
          store_as<A>(out->data, out->dtype, e, acc);
        }
      }
    }
  });
  return Error::Ok;
}

// cummax/cummin(self, dim, values, indices)
template <bool kMax>
Error cum_extreme(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  Tensor* values = a.out(2);
  Tensor* indices = a.out(3);
  if (!a.ok()) return a.error();
  DimSplit s;
  if (!s.init(a, *in, dim) || !resize_like(a, values, *in) || !resize_like(a, indices, *in)) return a.error();
  EMBER_DISPATCH_COMPUTE(in->dtype, C, {
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        C best{};
        int64_t bi = 0;
        for (int64_t k = 0; k < s.size; ++k) {
          int64_t e = s.at(o, i, k);
          C v = load_as<C>(in->data, in->dtype, e);
          bool take = k == 0;
          if (!take) {
            if constexpr (std::is_integral<C>::value) {
              take = kMax ? v >= best : v <= best;
            } else {
              take = std::isnan(v) || (!std::isnan(best) && (kMax ? v >= best : v <= best));
            }
          }
          if (take) {
            best = v;
            bi = k;
          }
          store_as<C>(values->data, values->dtype, e, best);
          store_as<int64_t>(indices->data, indices->dtype, e, bi);
        }
      }
    }
  });
  return Error::Ok;
}

// diff(self, n, dim, prepend?, append?, out): n-th forward difference along dim.
Error diff(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t order = a.int_value(1), dim = a.int_value(2);
  const Tensor* pre = a.optional_tensor(3);
  const Tensor* app = a.optional_tensor(4);
  Tensor* out = a.out(5);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->rank == 0) return a.fail("diff needs at least one dim"), a.error();
  if (order < 0) return a.fail("order must be non-negative"), a.error();
  dim = wrap_dim(dim, in->rank);
  if (dim < 0) return a.fail("dim out of range"), a.error();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= in->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < in->rank; ++d) inner *= in->sizes[d];
  int64_t np = pre ? (pre->rank == in->rank ? pre->sizes[dim] : 1) : 0;
  int64_t na = app ? (app->rank == in->rank ? app->sizes[dim] : 1) : 0;
  int64_t len = np + in->sizes[dim] + na;
  if ((pre && pre->numel() != outer * np * inner) || (app && app->numel() != outer * na * inner)) {
    return a.fail("prepend/append shapes must match self outside dim"), a.error();
  }
  int64_t out_len = len - order > 0 ? len - order : 0;
  Shape s(*in);
  s.d[dim] = out_len;
  if (!resize_to(a, out, s)) return a.error();
  // Work buffer of one line (len values) in temp memory.
  double* line = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(len + 1)));
  if (line == nullptr) return a.fail("diff needs temp memory", Error::OutOfMemory), a.error();
  bool is_bool = out->dtype == ScalarType::Bool;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t k = 0; k < len; ++k) {
        const Tensor* src = in;
        int64_t kk = k, sz = in->sizes[dim];
        if (k < np) { src = pre; kk = k; sz = np; }
        else if (k >= np + in->sizes[dim]) { src = app; kk = k - np - in->sizes[dim]; sz = na; }
        else kk = k - np;
        line[k] = load_as<double>(src->data, src->dtype, (o * sz + kk) * inner + i);
      }
      for (int64_t r = 0; r < order; ++r) {
        for (int64_t k = 0; k + 1 < len - r; ++k) {
          line[k] = is_bool ? static_cast<double>((line[k + 1] != 0) != (line[k] != 0)) : line[k + 1] - line[k];
        }
      }
      for (int64_t k = 0; k < out_len; ++k) store_as<double>(out->data, out->dtype, (o * out_len + k) * inner + i, line[k]);
    }
  }
  return Error::Ok;
}

// repeat_interleave.self_int(self, repeats, dim?, output_size?, out) and .self_Tensor.
Error repeat_interleave(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  const EValue& reps = a.at(1);
  const Tensor* rt = reps.is_tensor() ? reps.as_tensor : nullptr;
  int64_t rep_scalar = rt ? 0 : a.int_value(1);
  if (!a.ok()) return a.error();
  Tensor* out = a.out(4);
  bool flat = a.is_none(2);
  int64_t dim = flat ? 0 : a.int_value(2);
  if (!a.ok()) return a.error();
  // Flattened: treat input as 1-D.
  Shape ishape(*in);
  if (flat) {
    ishape = Shape();
    ishape.push(in->numel());
  }
  dim = wrap_dim(dim, ishape.rank);
  if (dim < 0 || ishape.rank == 0) return a.fail("dim out of range"), a.error();
  int64_t size = ishape.d[dim];
  if (rt && rt->numel() != size && rt->numel() != 1) return a.fail("repeats must match the dim size"), a.error();
  auto rep = [&](int64_t k) {
    return rt ? load_as<int64_t>(rt->data, rt->dtype, rt->numel() == 1 ? 0 : k) : rep_scalar;
  };
  int64_t total = 0;
  for (int64_t k = 0; k < size; ++k) {
    if (rep(k) < 0) return a.fail("repeats must be non-negative"), a.error();
    if (rep(k) > INT64_MAX - total) return a.fail("the repeats' sum overflows int64"), a.error();
    total += rep(k);
  }
  Shape s = ishape;
  s.d[dim] = total;
  if (!resize_to(a, out, s)) return a.error();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= ishape.d[d];
  for (int d = static_cast<int>(dim) + 1; d < ishape.rank; ++d) inner *= ishape.d[d];
  size_t ies = element_size(in->dtype), oes = element_size(out->dtype);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t pos = 0;
    for (int64_t k = 0; k < size; ++k) {
      int64_t r = rep(k);
      for (int64_t j = 0; j < r; ++j, ++pos) {
        copy_convert(static_cast<const uint8_t*>(in->data) + ((o * size + k) * inner) * ies, in->dtype,
                     static_cast<uint8_t*>(out->data) + ((o * total + pos) * inner) * oes, out->dtype, inner);
      }
    }
  }
  return Error::Ok;
}

// repeat_interleave.Tensor(repeats, output_size?, out): index k repeated repeats[k] times.
Error repeat_interleave_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* rt = a.tensor(0);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  // Each repeat non-negative and the sum in range: the copy below writes exactly `total`.
  int64_t total = 0;
  for (int64_t k = 0; k < rt->numel(); ++k) {
    const int64_t r = load_as<int64_t>(rt->data, rt->dtype, k);
    if (r < 0) return a.fail("repeats must be non-negative"), a.error();
    if (r > INT64_MAX - total) return a.fail("the repeats' sum overflows int64"), a.error();
    total += r;
  }
  Shape s;
  s.push(total);
  if (!resize_to(a, out, s)) return a.error();
  int64_t pos = 0;
  for (int64_t k = 0; k < rt->numel(); ++k) {
    for (int64_t j = load_as<int64_t>(rt->data, rt->dtype, k); j > 0; --j) store_as<int64_t>(out->data, out->dtype, pos++, k);
  }
  return Error::Ok;
}

// Ordering used by sort: NaN is greater than everything (last in ascending order).
template <typename C>
inline bool less_nan_last(C x, C y) {
  if constexpr (std::is_integral<C>::value) {
    return x < y;
  } else {
    if (std::isnan(x)) return false;
    if (std::isnan(y)) return true;
    return x < y;
  }
}

// Stable sort of `count` (value, index) pairs strided by `inner` in the output buffers,
// by binary insertion (no scratch memory).
template <typename C>
void sort_line(Tensor* values, Tensor* indices, int64_t base, int64_t inner, int64_t count, bool descending) {
  for (int64_t k = 1; k < count; ++k) {
    C v = load_as<C>(values->data, values->dtype, base + k * inner);
    int64_t vi = load_as<int64_t>(indices->data, indices->dtype, base + k * inner);
    int64_t lo = 0, hi = k;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      C m = load_as<C>(values->data, values->dtype, base + mid * inner);
      bool before = descending ? less_nan_last(m, v) : less_nan_last(v, m);
      if (before) hi = mid; else lo = mid + 1;
    }
    for (int64_t j = k; j > lo; --j) {
      store_as<C>(values->data, values->dtype, base + j * inner,
                  load_as<C>(values->data, values->dtype, base + (j - 1) * inner));
      store_as<int64_t>(indices->data, indices->dtype, base + j * inner,
                        load_as<int64_t>(indices->data, indices->dtype, base + (j - 1) * inner));
    }
    store_as<C>(values->data, values->dtype, base + lo * inner, v);
    store_as<int64_t>(indices->data, indices->dtype, base + lo * inner, vi);
  }
}

// Sorts `in` along dim into values/indices (both shaped like in).
Error sort_core(KernelArgs& a, const Tensor* in, int64_t dim, bool descending, Tensor* values, Tensor* indices) {
  DimSplit s;
  if (!a.ok() || in == nullptr) return a.ok() ? Error::InvalidArgument : a.error();
  if (!s.init(a, *in, dim) || !resize_like(a, values, *in) || !resize_like(a, indices, *in)) return a.error();
  copy_convert(in->data, in->dtype, values->data, values->dtype, in->numel());
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      for (int64_t k = 0; k < s.size; ++k) store_as<int64_t>(indices->data, indices->dtype, s.at(o, i, k), k);
    }
  }
  EMBER_DISPATCH_COMPUTE(values->dtype, C, {
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) sort_line<C>(values, indices, s.at(o, i, 0), s.inner, s.size, descending);
    }
  });
  return Error::Ok;
}

// sort.default(self, dim, descending, values, indices) / sort.stable(self, stable?, dim, descending, v, i)
Error sort(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n == 6) {
    return sort_core(a, a.tensor(0), a.int_value(2), a.bool_value(3), a.out(4), a.out(5));
  }
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  bool desc = a.bool_value(2);
  Tensor* values = a.out(3);
  Tensor* indices = a.out(4);
  if (!a.ok()) return a.error();
  return sort_core(a, in, dim, desc, values, indices);
}

// argsort(self, dim, descending, out) / argsort.stable(self, *, stable, dim, descending, out):
// sorts into temp values.
Error argsort(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (n != 4 && n != 5) return a.expect(4), a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(n == 4 ? 1 : 2);
  bool desc = a.bool_value(n == 4 ? 2 : 3);
  Tensor* out = a.out(n - 1);
  if (!a.ok()) return a.error();
  Tensor tmp = *in;
  int64_t tmp_sizes[kMaxRank];
  for (int d = 0; d < in->rank; ++d) tmp_sizes[d] = in->sizes[d];
  tmp.sizes = tmp_sizes;
  tmp.max_sizes = tmp_sizes;
  tmp.dim_order = nullptr;
  tmp.capacity_bytes = in->nbytes();
  tmp.data = ctx.allocate_temp(tmp.capacity_bytes + 1);
  if (tmp.data == nullptr) return a.fail("argsort needs temp memory", Error::OutOfMemory), a.error();
  return sort_core(a, in, dim, desc, &tmp, out);
}

// msort(self, out): sort along dim 0.
Error msort(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok()) return a.error();
  Tensor idx = *in;
  int64_t sizes[kMaxRank];
  for (int d = 0; d < in->rank; ++d) sizes[d] = in->sizes[d];
  idx.sizes = sizes;
  idx.max_sizes = sizes;
  idx.dtype = ScalarType::Int64;
  idx.dim_order = nullptr;
  idx.capacity_bytes = static_cast<size_t>(in->numel()) * 8;
  idx.data = ctx.allocate_temp(idx.capacity_bytes + 8);
  if (idx.data == nullptr) return a.fail("msort needs temp memory", Error::OutOfMemory), a.error();
  return sort_core(a, in, 0, false, out, &idx);
}

// Copies the first k elements of each sorted line of a temp sort into values/indices.
Error select_k(KernelContext& ctx, KernelArgs& a, const Tensor* in, int64_t dim, int64_t k, int64_t first,
               bool descending, bool keepdim_drop, Tensor* values, Tensor* indices) {
  if (!a.ok()) return a.error();
  Tensor sv = *in, si = *in;
  int64_t sizes[kMaxRank];
  for (int d = 0; d < in->rank; ++d) sizes[d] = in->sizes[d];
  sv.sizes = si.sizes = sizes;
  sv.max_sizes = si.max_sizes = sizes;
  sv.dim_order = si.dim_order = nullptr;
  sv.capacity_bytes = in->nbytes();
  si.dtype = ScalarType::Int64;
  si.capacity_bytes = static_cast<size_t>(in->numel()) * 8;
  sv.data = ctx.allocate_temp(sv.capacity_bytes + 8);
  si.data = ctx.allocate_temp(si.capacity_bytes + 8);
  if (sv.data == nullptr || si.data == nullptr) return a.fail("needs temp memory", Error::OutOfMemory), a.error();
  EMBER_TRY(sort_core(a, in, dim, descending, &sv, &si));
  int64_t d = wrap_dim(dim, in->rank);
  DimSplit s;
  s.init(a, *in, d);
  if (first < 0 || first + k > s.size) return a.fail("k out of range", Error::OutOfBounds), a.error();
  Shape os(*in);
  if (in->rank > 0) {
    if (keepdim_drop) {
      Shape t;
      for (int x = 0; x < in->rank; ++x) if (x != d) t.push(in->sizes[x]);
      os = t;
    } else {
      os.d[d] = k;
    }
  }
  if (!resize_to(a, values, os) || !resize_to(a, indices, os)) return a.error();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t j = 0; j < k; ++j) {
      for (int64_t i = 0; i < s.inner; ++i) {
        int64_t src = s.at(o, i, first + j);
        int64_t dst = (o * k + j) * s.inner + i;
        copy_convert(static_cast<uint8_t*>(sv.data) + src * element_size(sv.dtype), sv.dtype,
                     static_cast<uint8_t*>(values->data) + dst * element_size(values->dtype), values->dtype, 1);
        store_as<int64_t>(indices->data, indices->dtype, dst, load_as<int64_t>(si.data, si.dtype, src));
      }
    }
  }
  return Error::Ok;
}

// topk(self, k, dim, largest, sorted, values, indices)
Error topk(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1), dim = a.int_value(2);
  bool largest = a.bool_value(3);
  return select_k(ctx, a, in, dim, k, 0, largest, false, a.out(5), a.out(6));
}

// kthvalue(self, k, dim, keepdim, values, indices): k-th smallest (1-based).
Error kthvalue(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1), dim = a.int_value(2);
  bool keepdim = a.bool_value(3);
  return select_k(ctx, a, in, dim, 1, k - 1, false, !keepdim, a.out(4), a.out(5));
}

// median.dim / nanmedian.dim(self, dim, keepdim, values, indices): the lower median of each
// line (sorted with NaN last, ties by position). A line with NaN gives NaN (median; the first
// NaN's index) or the median of its other values (nanmedian; NaN when all are NaN), as ATen.
template <bool kNan>
Error median_dim(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  bool keepdim = a.bool_value(2);
  Tensor* values = a.out(3);
  Tensor* indices = a.out(4);
  if (!a.ok()) return a.error();
  DimSplit s;
  if (!s.init(a, *in, dim)) return a.error();
  if (s.size == 0) return a.fail("median of an empty dim"), a.error();
  Shape shape;
  for (int d = 0; d < in->rank; ++d) {
    if (d != dim) shape.push(in->sizes[d]);
    else if (keepdim) shape.push(1);
  }
  if (!resize_to(a, values, shape) || !resize_to(a, indices, shape)) return a.error();
  double* line = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(s.size)));
  int64_t* order = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(s.size)));
  if (line == nullptr || order == nullptr) return a.fail("median needs temp memory", Error::OutOfMemory), a.error();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      int64_t valid = 0;
      for (int64_t j = 0; j < s.size; ++j) {
        line[j] = load_as<double>(in->data, in->dtype, s.at(o, i, j));
        order[j] = j;
        valid += std::isnan(line[j]) ? 0 : 1;
      }
      std::stable_sort(order, order + s.size, [line](int64_t x, int64_t y) {
        return !std::isnan(line[x]) && (std::isnan(line[y]) || line[x] < line[y]);
      });
      int64_t pick;
      if (valid == 0) pick = 0;
      else if (!kNan && valid < s.size) pick = valid;  // the first NaN
      else pick = (valid - 1) / 2;
      store_as<double>(values->data, values->dtype, o * s.inner + i, line[order[pick]]);
      store_as<int64_t>(indices->data, indices->dtype, o * s.inner + i, order[pick]);
    }
  }
  return Error::Ok;
}

// median.default / nanmedian.default(self, out): over all elements.
template <bool kNan>
Error median_all(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(2)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(1);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  int64_t total = in->numel();
  if (total == 0) return a.fail("median of an empty tensor"), a.error();
  Tensor flat = *in;
  int64_t fs[1] = {total};
  flat.rank = 1;
  flat.sizes = fs;
  flat.max_sizes = fs;
  Tensor idx = flat;
  int64_t is[1] = {1};
  idx.sizes = is;
  idx.max_sizes = is;
  idx.dtype = ScalarType::Int64;
  int64_t idx_storage = 0;
  idx.data = &idx_storage;
  idx.capacity_bytes = 8;
  idx.dynamic = true;
  Tensor val = *out;
  int64_t vs[1] = {1};
  val.rank = 1;
  val.sizes = vs;
  val.max_sizes = vs;
  val.dynamic = true;
  int64_t count = total;
  if (kNan && is_floating(in->dtype)) {
    count = 0;
    for (int64_t i = 0; i < total; ++i) count += std::isnan(load_as<double>(in->data, in->dtype, i)) ? 0 : 1;
    if (count == 0) count = total;
  }
  if (!resize_to(a, out, Shape())) return a.error();
  return select_k(ctx, a, &flat, 0, 1, (count - 1) / 2, false, false, &val, &idx);
}

enum class Interpolation { Linear, Lower, Higher, Midpoint, Nearest };

// One quantile of a sorted line (NaN last) with `valid` non-NaN values, as ATen's
// quantile_compute: the rank is computed in the input's precision T, a line with NaN gives NaN
// for quantile (rank = last index), nanquantile ranks among the valid values only.
template <typename T, bool kNan>
double quantile_of_sorted(const double* line, int64_t len, int64_t valid, double q_value, Interpolation mode) {
  const T q = static_cast<T>(q_value);
  T rank;
  if (kNan) {
    rank = q * static_cast<T>(valid - 1);
    if (rank < 0) rank = 0;  // all NaN: index 0 holds NaN
  } else {
    rank = valid < len ? static_cast<T>(len - 1) : q * static_cast<T>(len - 1);
  }
  if (mode == Interpolation::Lower) rank = std::floor(rank);
  if (mode == Interpolation::Higher) rank = std::ceil(rank);
  if (mode == Interpolation::Nearest) rank = std::nearbyint(rank);  // half to even, as round_
  const int64_t below = static_cast<int64_t>(rank);
  const T lo = static_cast<T>(line[below]);
  if (mode != Interpolation::Linear && mode != Interpolation::Midpoint) return lo;
  const T hi = static_cast<T>(line[static_cast<int64_t>(std::ceil(rank))]);
  const T w = mode == Interpolation::Midpoint ? T(0.5) : rank - static_cast<T>(below);
  // lerp as ATen's CPU kernel evaluates it.
  return w < T(0.5) ? lo + w * (hi - lo) : hi - (hi - lo) * (T(1) - w);
}

// quantile / nanquantile(self, q, dim?, keepdim, *, interpolation, out): .scalar has a float
// q, .default a 0-d or 1-d tensor q (a 1-d q is the output's leading dim). dim None: over
// all elements (keepdim keeps every dim as 1).
template <bool kNan>
Error quantile(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(5);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (in->dtype != ScalarType::Float32 && in->dtype != ScalarType::Float64) {
    return a.fail("quantile needs a float32 or float64 input"), a.error();
  }
  const Tensor* qt = a.at(1).is_tensor() ? a.at(1).as_tensor : nullptr;
  const double q_scalar = qt == nullptr ? a.scalar(1) : 0.0;
  if (qt != nullptr && (qt->rank > 1 || !require_contiguous(a, qt))) {
    return a.fail("quantile: q must be a scalar or a 0-d/1-d tensor"), a.error();
  }
  const int64_t nq = qt == nullptr ? 1 : qt->numel();
  const bool has_dim = !a.is_none(2);
  int64_t dim = has_dim ? a.int_value(2) : 0;
  const bool keepdim = a.bool_value(3);
  Interpolation mode = Interpolation::Linear;
  if (a.string_is(4, "lower")) mode = Interpolation::Lower;
  else if (a.string_is(4, "higher")) mode = Interpolation::Higher;
  else if (a.string_is(4, "midpoint")) mode = Interpolation::Midpoint;
  else if (a.string_is(4, "nearest")) mode = Interpolation::Nearest;
  else if (!a.string_is(4, "linear")) return a.fail("quantile: interpolation must be linear, lower, higher, midpoint or nearest"), a.error();
  if (!a.ok()) return a.error();

  DimSplit split;
  split.size = in->numel();
  Shape shape;
  if (qt != nullptr && qt->rank == 1) shape.push(nq);
  if (has_dim) {
    if (!split.init(a, *in, dim)) return a.error();
    for (int d = 0; d < in->rank; ++d) {
      if (d != dim) shape.push(in->sizes[d]);
      else if (keepdim) shape.push(1);
    }
  } else if (keepdim) {
    for (int d = 0; d < in->rank; ++d) shape.push(1);
  }
  if (!resize_to(a, out, shape)) return a.error();
  if (split.size == 0) return a.fail("quantile of an empty tensor; PyTorch refuses it too"), a.error();
  for (int64_t k = 0; k < nq; ++k) {
    double q = qt == nullptr ? q_scalar : load_as<double>(qt->data, qt->dtype, k);
    if (!(q >= 0.0 && q <= 1.0)) return a.fail("quantile: q must be in [0, 1]"), a.error();
  }
  double* line = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(split.size)));
  if (line == nullptr) return a.fail("quantile needs temp memory", Error::OutOfMemory), a.error();
  const int64_t lines = split.outer * split.inner;
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t i = 0; i < split.inner; ++i) {
      int64_t valid = 0;
      for (int64_t j = 0; j < split.size; ++j) {
        line[j] = load_as<double>(in->data, in->dtype, split.at(o, i, j));
        valid += std::isnan(line[j]) ? 0 : 1;
      }
      std::sort(line, line + split.size, [](double x, double y) { return !std::isnan(x) && (std::isnan(y) || x < y); });
      for (int64_t k = 0; k < nq; ++k) {
        double q = qt == nullptr ? q_scalar : load_as<double>(qt->data, qt->dtype, k);
        double v = in->dtype == ScalarType::Float32
                       ? quantile_of_sorted<float, kNan>(line, split.size, valid, q, mode)
                       : quantile_of_sorted<double, kNan>(line, split.size, valid, q, mode);
        store_as<double>(out->data, out->dtype, k * lines + o * split.inner + i, v);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::cumsum.default", scan<Scan::Sum>);
EMBER_REGISTER_KERNEL("aten::cumsum_.default", scan<Scan::Sum>);
EMBER_REGISTER_KERNEL("aten::cumprod.default", scan<Scan::Prod>);
EMBER_REGISTER_KERNEL("aten::logcumsumexp.default", scan<Scan::LogSumExp>);
EMBER_REGISTER_KERNEL("aten::cummax.default", cum_extreme<true>);
EMBER_REGISTER_KERNEL("aten::cummin.default", cum_extreme<false>);
EMBER_REGISTER_KERNEL("aten::diff.default", diff);
EMBER_REGISTER_KERNEL("aten::repeat_interleave.self_int", repeat_interleave);
EMBER_REGISTER_KERNEL("aten::repeat_interleave.self_Tensor", repeat_interleave);
EMBER_REGISTER_KERNEL("aten::repeat_interleave.Tensor", repeat_interleave_tensor);
EMBER_REGISTER_KERNEL("aten::sort.default", sort);
EMBER_REGISTER_KERNEL("aten::sort.stable", sort);
EMBER_REGISTER_KERNEL("aten::argsort.default", argsort);
EMBER_REGISTER_KERNEL("aten::argsort.stable", argsort);
EMBER_REGISTER_KERNEL("aten::msort.default", msort);
EMBER_REGISTER_KERNEL("aten::topk.default", topk);
EMBER_REGISTER_KERNEL("aten::kthvalue.default", kthvalue);
EMBER_REGISTER_KERNEL("aten::median.dim", median_dim<false>);
EMBER_REGISTER_KERNEL("aten::nanmedian.dim", median_dim<true>);
EMBER_REGISTER_KERNEL("aten::quantile.default", quantile<false>);
EMBER_REGISTER_KERNEL("aten::quantile.scalar", quantile<false>);
EMBER_REGISTER_KERNEL("aten::nanquantile.default", quantile<true>);
EMBER_REGISTER_KERNEL("aten::nanquantile.scalar", quantile<true>);
EMBER_REGISTER_KERNEL("aten::median.default", median_all<false>);
EMBER_REGISTER_KERNEL("aten::nanmedian.default", median_all<true>);

}  // namespace portable
}  // namespace ember
