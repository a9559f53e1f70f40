// Assorted ops: searchsorted/bucketize, histc, frexp, isin, rot90, outer, sum_to_size,
// dist, cross/linalg_cross, as_strided_scatter, unique_consecutive, _unique2,
// trapezoid/trapz, cumulative_trapezoid, kron, histogram.bin_ct, resize.
#include <algorithm>
#include <cmath>

#include "kernels/portable/util/copy.h"
#include "kernels/portable/util/binary_util.h"
#include "kernels/portable/util/reduce.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Position of v in the sorted row [p, p + len) (left: first >= v; right: first > v).
int64_t search_row(const Tensor* seq, int64_t base, int64_t len, double v, bool right) {
  int64_t lo = 0, hi = len;
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    double m = load_as<double>(seq->data, seq->dtype, base + mid);
    bool go_right = right ? !(v < m) : (m < v);
    if (go_right) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// searchsorted.Tensor(sorted_sequence, self, *, out_int32, right, side?, sorter?, out)
Error searchsorted(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* seq = a.tensor(0);
  const Tensor* vals = a.tensor(1);
  bool right = a.bool_value(3) || a.string_is(4, "right");
  Tensor* out = a.out(6);
  if (!a.ok() || !require_contiguous(a, seq) || !require_contiguous(a, vals)) return a.error();
  if (!a.is_none(5)) return a.fail("sorter is not supported", Error::NotSupported), a.error();
  if (seq->rank == 0) return a.fail("sorted_sequence must have at least one dim"), a.error();
  int64_t len = seq->sizes[seq->rank - 1];
  int64_t rows = len == 0 ? 0 : seq->numel() / len;
  bool one_d = seq->rank == 1;
  int64_t per_row = vals->rank == 0 ? 1 : vals->sizes[vals->rank - 1];
  if (!one_d && (vals->rank != seq->rank || vals->numel() != rows * per_row)) {
    return a.fail("sorted_sequence and values leading dims must match"), a.error();
  }
  if (!resize_like(a, out, *vals)) return a.error();
  for (int64_t i = 0; i < vals->numel(); ++i) {
    int64_t row = one_d ? 0 : i / per_row;
    double v = load_as<double>(vals->data, vals->dtype, i);
    store_as<int64_t>(out->data, out->dtype, i, search_row(seq, row * len, len, v, right));
  }
  return Error::Ok;
}

// bucketize.Tensor(self, boundaries, *, out_int32, right, out)
Error bucketize(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* vals = a.tensor(0);
  const Tensor* bounds = a.tensor(1);
  bool right = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, vals) || !require_contiguous(a, bounds)) return a.error();
  if (bounds->rank != 1) return a.fail("boundaries must be 1-D"), a.error();
  if (!resize_like(a, out, *vals)) return a.error();
  for (int64_t i = 0; i < vals->numel(); ++i) {
    double v = load_as<double>(vals->data, vals->dtype, i);
    store_as<int64_t>(out->data, out->dtype, i, search_row(bounds, 0, bounds->sizes[0], v, right));
  }
  return Error::Ok;
}

// histc(self, bins, min, max, out): min == max uses the data range.
Error histc(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t bins = a.int_value(1);
  double lo = a.scalar(2), hi = a.scalar(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (bins <= 0) return a.fail("bins must be positive"), a.error();
  int64_t total = in->numel();
  if (lo == hi && total > 0) {
    lo = hi = load_as<double>(in->data, in->dtype, 0);
    for (int64_t i = 1; i < total; ++i) {
      double v = load_as<double>(in->data, in->dtype, i);
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  Shape s;
  s.push(bins);
  if (!resize_to(a, out, s)) return a.error();
  for (int64_t b = 0; b < bins; ++b) store_as<double>(out->data, out->dtype, b, 0);
  for (int64_t i = 0; i < total; ++i) {
    double v = load_as<double>(in->data, in->dtype, i);
    if (!(v >= lo && v <= hi)) continue;
    int64_t b = static_cast<int64_t>((v - lo) * static_cast<double>(bins) / (hi - lo));
    if (b == bins) b = bins - 1;
    store_as<double>(out->data, out->dtype, b, load_as<double>(out->data, out->dtype, b) + 1);
  }
  return Error::Ok;
}

// frexp.Tensor(self, mantissa, exponent)
Error frexp(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* mant = a.out(1);
  Tensor* expo = a.out(2);
  if (!a.ok() || !require_contiguous(a, in) || !resize_like(a, mant, *in) || !resize_like(a, expo, *in)) {
    return a.error();
  }
  if (!is_floating(in->dtype)) return a.fail("frexp needs a floating tensor"), a.error();
  for (int64_t i = 0; i < in->numel(); ++i) {
    int e = 0;
    double m = std::frexp(load_as<double>(in->data, in->dtype, i), &e);
    store_as<double>(mant->data, mant->dtype, i, m);
    store_as<int64_t>(expo->data, expo->dtype, i, e);
  }
  return Error::Ok;
}

// isin.Tensor_Tensor(elements, test_elements, assume_unique, invert, out) (+ Scalar overloads)
Error isin(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  Operand el(a.at(0)), test(a.at(1));
  bool invert = a.bool_value(3);
  Tensor* out = a.out(4);
  if (!a.ok()) return a.error();
  if (!el.valid() || !test.valid()) return a.fail("expected tensors or scalars"), a.error();
  const Tensor* e = el.tensor();
  const Tensor* t = test.tensor();
  if (!require_contiguous(a, e) || !require_contiguous(a, t) || !resize_like(a, out, *e)) return a.error();
  bool ints = !is_floating(e->dtype) && !is_floating(t->dtype);
  for (int64_t i = 0; i < e->numel(); ++i) {
    bool found = false;
    for (int64_t j = 0; j < t->numel() && !found; ++j) {
      found = ints ? load_as<int64_t>(e->data, e->dtype, i) == load_as<int64_t>(t->data, t->dtype, j)
                   : load_as<double>(e->data, e->dtype, i) == load_as<double>(t->data, t->dtype, j);
    }
    store_as<bool>(out->data, out->dtype, i, found != invert);
  }
  return Error::Ok;
}

// rot90(self, k, dims[2], out)
Error rot90(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t k = a.int_value(1);
  Span<const int64_t> dims = a.int_list(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (dims.size() != 2 || in->rank < 2) return a.fail("rot90 needs two dims of a tensor with rank >= 2"), a.error();
  int64_t d0 = wrap_dim(dims[0], in->rank), d1 = wrap_dim(dims[1], in->rank);
  if (d0 < 0 || d1 < 0 || d0 == d1) return a.fail("invalid rot90 dims"), a.error();
  k = ((k % 4) + 4) % 4;
  StridedView v = StridedView::of(*in);
  auto flip = [&](int64_t d) {
    if (v.sizes[d] > 0) {
      v.offset += (v.sizes[d] - 1) * v.strides[d];
      v.strides[d] = -v.strides[d];
    }
  };
  auto swap = [&]() {
    int64_t s = v.sizes[d0], t = v.strides[d0];
    v.sizes[d0] = v.sizes[d1];
    v.strides[d0] = v.strides[d1];
    v.sizes[d1] = s;
    v.strides[d1] = t;
  };
  // k=1: flip(d1) then transpose; k=2: flip both; k=3: transpose then flip(d1).
  if (k == 1) { flip(d1); swap(); }
  if (k == 2) { flip(d0); flip(d1); }
  if (k == 3) { swap(); flip(d1); }
  Shape s;
  s.rank = v.rank;
  for (int d = 0; d < v.rank; ++d) s.d[d] = v.sizes[d];
  if (!resize_to(a, out, s)) return a.error();
  copy_view(ctx, *in, v, *out);
  return Error::Ok;
}

// outer(self, vec2, out) / ger
Error outer(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* y = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (x->rank != 1 || y->rank != 1) return a.fail("outer needs 1-D tensors"), a.error();
  Tensor xc = *x;
  int64_t xs[2] = {x->sizes[0], 1};
  xc.rank = 2;
  xc.sizes = xs;
  xc.max_sizes = xs;
  return binary_op(ctx, a, &xc, y, out, result_type(*x, *y), [](auto tag) {
    using C = decltype(tag);
    return [](C p, C q) -> C { return mul_op(p, q); };
  });
}

// sum_to_size(self, size[], out): sums broadcast dims down to `size`.
Error sum_to_size(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.out(2);
  if (!a.ok()) return a.error();
  if (size.size() > in->rank) return a.fail("size has more dims than the input"), a.error();
  int64_t dims[kMaxRank];
  size_t nd = 0;
  int lead = in->rank - static_cast<int>(size.size());
  for (int d = 0; d < in->rank; ++d) {
    if (d < lead) dims[nd++] = d;
    else if (size[d - lead] == 1 && in->sizes[d] != 1) dims[nd++] = d;
    else if (size[d - lead] != in->sizes[d]) return a.fail("size is not expandable to the input"), a.error();
  }
  ReducePlan p;
  if (nd == 0) {
    if (!resize_like(a, out, *in)) return a.error();
    copy_convert(in->data, in->dtype, out->data, out->dtype, in->numel());
    return Error::Ok;
  }
  if (!p.init(a, *in, Span<const int64_t>(dims, nd), true)) return a.error();
  Shape s;
  for (size_t i = 0; i < size.size(); ++i) s.push(size[i]);
  if (!resize_to(a, out, s)) return a.error();
  for_each_output(ctx, p, [&](int64_t o) {
    double acc = 0;
    p.for_each_reduced(p.base(o), [&](int64_t off) { acc += load_as<double>(in->data, in->dtype, off); });
    store_as<double>(out->data, out->dtype, o, acc);
  });
  return Error::Ok;
}

// dist(self, other, p, out): p-norm of the broadcast difference.
Error dist(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* y = a.tensor(1);
  double p = a.scalar(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, x) || !require_contiguous(a, y)) return a.error();
  Shape b;
  if (!broadcast_shapes(Shape(*x), Shape(*y), b)) return a.fail("shapes do not broadcast"), a.error();
  if (!resize_to(a, out, Shape())) return a.error();
  int64_t total = b.numel();
  int64_t xs[kMaxRank], ys[kMaxRank];
  contiguous_strides(x->sizes, x->rank, xs);
  contiguous_strides(y->sizes, y->rank, ys);
  double acc = std::isinf(p) && p < 0 ? INFINITY : 0;
  int64_t idx[kMaxRank] = {};
  for (int64_t i = 0; i < total; ++i) {
    int64_t ox = 0, oy = 0;
    for (int d = 0; d < b.rank; ++d) {
      int xd = d - (b.rank - x->rank), yd = d - (b.rank - y->rank);
      if (xd >= 0 && x->sizes[xd] != 1) ox += idx[d] * xs[xd];
      if (yd >= 0 && y->sizes[yd] != 1) oy += idx[d] * ys[yd];
    }
    double v = std::fabs(load_as<double>(x->data, x->dtype, ox) - load_as<double>(y->data, y->dtype, oy));
    if (std::isinf(p)) acc = p > 0 ? (v > acc ? v : acc) : (v < acc ? v : acc);
    else if (p == 0) acc += v != 0;
    else acc += std::pow(v, p);
    for (int d = b.rank - 1; d >= 0; --d) {
      if (++idx[d] < b.d[d]) break;
      idx[d] = 0;
    }
  }
  if (!std::isinf(p) && p != 0) acc = std::pow(acc, 1.0 / p);
  store_as<double>(out->data, out->dtype, 0, acc);
  return Error::Ok;
}

// cross(self, other, dim?, out) / linalg_cross(self, other, dim, out): same shapes, size 3 at dim.
Error cross(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* y = a.tensor(1);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, x) || !require_contiguous(a, y)) return a.error();
  if (Shape(*x).numel() != Shape(*y).numel() || x->rank != y->rank) {
    return a.fail("cross needs tensors of the same shape", Error::NotSupported), a.error();
  }
  int64_t dim = -1;
  if (a.is_none(2)) {
    for (int d = 0; d < x->rank && dim < 0; ++d) if (x->sizes[d] == 3) dim = d;
  } else {
    dim = wrap_dim(a.int_value(2), x->rank);
  }
  if (dim < 0 || x->sizes[dim] != 3) return a.fail("cross dim must have size 3"), a.error();
  if (!resize_like(a, out, *x)) return a.error();
  int64_t inner = 1, outer = 1;
  for (int d = 0; d < dim; ++d) outer *= x->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < x->rank; ++d) inner *= x->sizes[d];
  EMBER_DISPATCH_COMPUTE(result_type(*x, *y), C, {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t b = o * 3 * inner + i;
        C p[3], q[3];
        for (int c = 0; c < 3; ++c) {
          p[c] = load_as<C>(x->data, x->dtype, b + c * inner);
          q[c] = load_as<C>(y->data, y->dtype, b + c * inner);
        }
        store_as<C>(out->data, out->dtype, b, sub_op(mul_op(p[1], q[2]), mul_op(p[2], q[1])));
        store_as<C>(out->data, out->dtype, b + inner, sub_op(mul_op(p[2], q[0]), mul_op(p[0], q[2])));
        store_as<C>(out->data, out->dtype, b + 2 * inner, sub_op(mul_op(p[0], q[1]), mul_op(p[1], q[0])));
      }
    }
  });
  return Error::Ok;
}

// as_strided_scatter(self, src, size[], stride[], storage_offset?, out)
Error as_strided_scatter(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* self = a.tensor(0);
  const Tensor* src = a.tensor(1);
  Span<const int64_t> size = a.int_list(2), stride = a.int_list(3);
  int64_t offset = a.optional_int(4, 0);
  Tensor* out = a.out(5);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, src)) return a.error();
  if (size.size() != stride.size() || size.size() > static_cast<size_t>(kMaxRank)) {
    return a.fail("size and stride differ in length"), a.error();
  }
  StridedView v;
  v.rank = static_cast<int>(size.size());
  v.offset = offset;
  int64_t max_off = offset;
  for (int d = 0; d < v.rank; ++d) {
    if (size[d] < 0 || stride[d] < 0) return a.fail("negative size or stride"), a.error();
    v.sizes[d] = size[d];
    v.strides[d] = stride[d];
    if (size[d] > 0) max_off += (size[d] - 1) * stride[d];
  }
  if (v.numel() != src->numel()) return a.fail("src does not match size"), a.error();
  if (v.numel() > 0 && (offset < 0 || max_off >= self->numel())) return a.fail("view out of range", Error::OutOfBounds), a.error();
  if (!resize_like(a, out, *self)) return a.error();
  copy_convert(self->data, self->dtype, out->data, out->dtype, self->numel());
  copy_into_view(*src, *out, v);
  return Error::Ok;
}

// unique_consecutive(self, return_inverse, return_counts, dim?, out, inverse, counts)
// (flattened only) and _unique2(self, sorted, return_inverse, return_counts, out, inverse,
// counts): sorted unique values via a temp sort.
template <bool kSorted>
Error unique(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  // Flags: _unique2(self, sorted, return_inverse, return_counts); unique_consecutive(self,
  // return_inverse, return_counts, dim).
  bool want_inverse = a.bool_value(kSorted ? 2 : 1);
  bool want_counts = a.bool_value(kSorted ? 3 : 2);
  Tensor* out = a.out(4);
  Tensor* inverse = a.out(5);
  Tensor* counts = a.out(6);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  if (!kSorted && !a.is_none(3)) return a.fail("unique_consecutive over a dim is not supported", Error::NotSupported), a.error();
  int64_t total = in->numel();
  // order[k]: input position of the k-th element in processing order.
  int64_t* order = static_cast<int64_t*>(ctx.allocate_temp(sizeof(int64_t) * static_cast<size_t>(total + 1)));
  if (order == nullptr) return a.fail("unique needs temp memory", Error::OutOfMemory), a.error();
  for (int64_t i = 0; i < total; ++i) order[i] = i;
  auto val = [&](int64_t i) { return load_as<double>(in->data, in->dtype, i); };
  if (kSorted) {
    for (int64_t i = 1; i < total; ++i) {  // stable insertion sort of positions by value
      int64_t p = order[i];
      double v = val(p);
      int64_t j = i;
      while (j > 0 && val(order[j - 1]) > v) {
        order[j] = order[j - 1];
        --j;
      }
      order[j] = p;
    }
  }
  int64_t groups = 0;
  for (int64_t k = 0; k < total; ++k) {
    if (k == 0 || val(order[k]) != val(order[k - 1])) ++groups;
  }
  // Results not asked for are empty tensors (their planned rank kept).
  auto empty = [&](Tensor* t) {
    Shape z;
    for (int d = 0; d < t->rank; ++d) z.push(0);
    return resize_to(a, t, z);
  };
  Shape s;
  s.push(groups);
  if (!resize_to(a, out, s)) return a.error();
  if (!(want_counts ? resize_to(a, counts, s) : empty(counts))) return a.error();
  if (!(want_inverse ? resize_like(a, inverse, *in) : empty(inverse))) return a.error();
  const bool write_inverse = want_inverse;
  int64_t g = -1, run = 0;
  for (int64_t k = 0; k < total; ++k) {
    if (k == 0 || val(order[k]) != val(order[k - 1])) {
      if (g >= 0 && want_counts) store_as<int64_t>(counts->data, counts->dtype, g, run);
      ++g;
      run = 0;
      copy_convert(static_cast<const uint8_t*>(in->data) + order[k] * element_size(in->dtype), in->dtype,
                   static_cast<uint8_t*>(out->data) + g * element_size(out->dtype), out->dtype, 1);
    }
    ++run;
    if (write_inverse) store_as<int64_t>(inverse->data, inverse->dtype, order[k], g);
  }
  if (g >= 0 && want_counts) store_as<int64_t>(counts->data, counts->dtype, g, run);
  return Error::Ok;
}

// trapezoid.x / trapz.x(y, x, dim, out) and trapezoid.dx / trapz.dx(y, dx, dim, out)
Error trapezoid(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* y = a.tensor(0);
  const EValue& xv = a.at(1);
  int64_t dim = a.int_value(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, y)) return a.error();
  dim = wrap_dim(dim, y->rank);
  if (dim < 0 || y->rank == 0) return a.fail("dim out of range"), a.error();
  const Tensor* x = xv.is_tensor() ? xv.as_tensor : nullptr;
  double dx = x ? 0 : xv.to_double();
  int64_t outer = 1, inner = 1, size = y->sizes[dim];
  for (int d = 0; d < dim; ++d) outer *= y->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < y->rank; ++d) inner *= y->sizes[d];
  if (x && !(x->rank == 1 && x->sizes[0] == size) && x->numel() != y->numel()) {
    return a.fail("x must be 1-D of the dim size or shaped like y", Error::NotSupported), a.error();
  }
  Shape s;
  for (int d = 0; d < y->rank; ++d) if (d != dim) s.push(y->sizes[d]);
  if (!resize_to(a, out, s)) return a.error();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t k = 0; k + 1 < size; ++k) {
        int64_t e0 = (o * size + k) * inner + i, e1 = e0 + inner;
        double h = dx;
        if (x) {
          bool one_d = x->rank == 1;
          h = load_as<double>(x->data, x->dtype, one_d ? k + 1 : e1) - load_as<double>(x->data, x->dtype, one_d ? k : e0);
        }
        acc += h * (load_as<double>(y->data, y->dtype, e0) + load_as<double>(y->data, y->dtype, e1)) / 2;
      }
      store_as<double>(out->data, out->dtype, o * inner + i, acc);
    }
  }
  return Error::Ok;
}

// kron(self, other, out): out[i * bs + j] = a[i] * b[j] per dim (ranks aligned left-padded).
Error kron(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  const Tensor* x = a.tensor(0);
  const Tensor* y = a.tensor(1);
  Tensor* out = a.out(2);
  if (!a.ok() || !require_contiguous(a, x) || !require_contiguous(a, y)) return a.error();
  int r = x->rank > y->rank ? x->rank : y->rank;
  int64_t xs[kMaxRank], ys[kMaxRank];
  Shape s;
  for (int d = 0; d < r; ++d) {
    int xd = d - (r - x->rank), yd = d - (r - y->rank);
    xs[d] = xd >= 0 ? x->sizes[xd] : 1;
    ys[d] = yd >= 0 ? y->sizes[yd] : 1;
    s.push(xs[d] * ys[d]);
  }
  if (!resize_to(a, out, s)) return a.error();
  int64_t xst[kMaxRank], yst[kMaxRank];
  contiguous_strides(xs, r, xst);
  contiguous_strides(ys, r, yst);
  int64_t idx[kMaxRank] = {};
  int64_t total = s.numel();
  EMBER_DISPATCH_COMPUTE(result_type(*x, *y), C, {
    for (int64_t e = 0; e < total; ++e) {
      int64_t ox = 0, oy = 0;
      for (int d = 0; d < r; ++d) {
        ox += (idx[d] / ys[d]) * xst[d];
        oy += (idx[d] % ys[d]) * yst[d];
      }
      store_as<C>(out->data, out->dtype, e, mul_op(load_as<C>(x->data, x->dtype, ox), load_as<C>(y->data, y->dtype, oy)));
      for (int d = r - 1; d >= 0; --d) {
        if (++idx[d] < s.d[d]) break;
        idx[d] = 0;
      }
    }
  });
  return Error::Ok;
}

// cumulative_trapezoid.x(y, x, dim, out) / .dx(y, dx, dim, out)
Error cumulative_trapezoid(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* y = a.tensor(0);
  const EValue& xv = a.at(1);
  int64_t dim = a.int_value(2);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, y)) return a.error();
  dim = wrap_dim(dim, y->rank);
  if (dim < 0 || y->rank == 0) return a.fail("dim out of range"), a.error();
  const Tensor* x = xv.is_tensor() ? xv.as_tensor : nullptr;
  double dx = x ? 0 : xv.to_double();
  int64_t outer = 1, inner = 1, size = y->sizes[dim];
  for (int d = 0; d < dim; ++d) outer *= y->sizes[d];
  for (int d = static_cast<int>(dim) + 1; d < y->rank; ++d) inner *= y->sizes[d];
  if (x && !(x->rank == 1 && x->sizes[0] == size) && x->numel() != y->numel()) {
    return a.fail("x must be 1-D of the dim size or shaped like y", Error::NotSupported), a.error();
  }
  int64_t out_len = size > 0 ? size - 1 : 0;
  Shape s(*y);
  s.d[dim] = out_len;
  if (!resize_to(a, out, s)) return a.error();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t k = 0; k + 1 < size; ++k) {
        int64_t e0 = (o * size + k) * inner + i, e1 = e0 + inner;
        double h = dx;
        if (x) {
          bool one_d = x->rank == 1;
          h = load_as<double>(x->data, x->dtype, one_d ? k + 1 : e1) - load_as<double>(x->data, x->dtype, one_d ? k : e0);
        }
        acc += h * (load_as<double>(y->data, y->dtype, e0) + load_as<double>(y->data, y->dtype, e1)) / 2;
        store_as<double>(out->data, out->dtype, (o * out_len + k) * inner + i, acc);
      }
    }
  }
  return Error::Ok;
}

// histogram.bin_ct(self, bins, *, range?, weight?, density, hist, bin_edges)
Error histogram(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t bins = a.int_value(1);
  const Tensor* weight = a.optional_tensor(3);
  bool density = a.bool_value(4);
  Tensor* hist = a.out(5);
  Tensor* edges = a.out(6);
  if (!a.ok() || !require_contiguous(a, in) || (weight && !require_contiguous(a, weight))) return a.error();
  if (bins <= 0) return a.fail("bins must be positive"), a.error();
  if (weight && weight->numel() != in->numel()) return a.fail("weight must match the input"), a.error();
  int64_t total = in->numel();
  double lo = 0, hi = 0;
  const EValue& range = a.at(2);
  if (range.tag == ValueTag::DoubleList && range.as_double_list.size() == 2) {
    lo = range.as_double_list[0];
    hi = range.as_double_list[1];
  } else if (!range.is_none()) {
    return a.fail("range must be None or two floats"), a.error();
  } else if (total > 0) {
    lo = hi = load_as<double>(in->data, in->dtype, 0);
    for (int64_t i = 1; i < total; ++i) {
      double v = load_as<double>(in->data, in->dtype, i);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
  }
  if (lo == hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  Shape hs, es;
  hs.push(bins);
  es.push(bins + 1);
  if (!resize_to(a, hist, hs) || !resize_to(a, edges, es)) return a.error();
  for (int64_t b = 0; b <= bins; ++b) {
    store_as<double>(edges->data, edges->dtype, b, lo + (hi - lo) * static_cast<double>(b) / static_cast<double>(bins));
  }
  for (int64_t b = 0; b < bins; ++b) store_as<double>(hist->data, hist->dtype, b, 0);
  double sum = 0;
  for (int64_t i = 0; i < total; ++i) {
    double v = load_as<double>(in->data, in->dtype, i);
    if (!(v >= lo && v <= hi)) continue;
    int64_t b = static_cast<int64_t>((v - lo) * static_cast<double>(bins) / (hi - lo));
    if (b >= bins) b = bins - 1;
    double w = weight ? load_as<double>(weight->data, weight->dtype, i) : 1.0;
    store_as<double>(hist->data, hist->dtype, b, load_as<double>(hist->data, hist->dtype, b) + w);
    sum += w;
  }
  if (density && sum != 0) {
    double width = (hi - lo) / static_cast<double>(bins);
    for (int64_t b = 0; b < bins; ++b) {
      store_as<double>(hist->data, hist->dtype, b, load_as<double>(hist->data, hist->dtype, b) / (sum * width));
    }
  }
  return Error::Ok;
}

// histogram.bins_tensor(self, bins, *, weight?, density, hist, bin_edges): `bins` are the
// increasing edges; as ATen, v falls in bin b when edges[b] <= v < edges[b + 1], the last
// edge is inclusive, values outside [edges[0], edges[-1]] are not counted; density divides by
// the total weight times each bin's own width.
Error histogram_edges(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* edges_in = a.tensor(1);
  const Tensor* weight = a.optional_tensor(2);
  const bool density = a.bool_value(3);
  Tensor* hist = a.out(4);
  Tensor* edges = a.out(5);
  if (!a.ok() || !require_contiguous(a, in) || !require_contiguous(a, edges_in)) return a.error();
  if (weight != nullptr && (!require_contiguous(a, weight) || weight->numel() != in->numel())) {
    return a.fail("histogram: weight must have the input's shape"), a.error();
  }
  if (edges_in->rank != 1 || edges_in->numel() < 2) return a.fail("histogram: bins must be a 1-D tensor of at least 2 edges"), a.error();
  const int64_t nedges = edges_in->numel(), bins = nedges - 1;
  Shape hs;
  hs.push(bins);
  if (!resize_to(a, hist, hs) || !resize_like(a, edges, *edges_in)) return a.error();
  copy_convert(edges_in->data, edges_in->dtype, edges->data, edges->dtype, nedges);
  double* e = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(nedges)));
  double* h = static_cast<double*>(ctx.allocate_temp(sizeof(double) * static_cast<size_t>(bins)));
  if (e == nullptr || h == nullptr) return a.fail("histogram needs temp memory", Error::OutOfMemory), a.error();
  for (int64_t b = 0; b < nedges; ++b) {
    e[b] = load_as<double>(edges_in->data, edges_in->dtype, b);
    if (b > 0 && !(e[b] >= e[b - 1])) return a.fail("histogram: bin edges must increase"), a.error();
  }
  for (int64_t b = 0; b < bins; ++b) h[b] = 0;
  double sum = 0;
  for (int64_t i = 0; i < in->numel(); ++i) {
    const double v = load_as<double>(in->data, in->dtype, i);
    if (!(v >= e[0] && v <= e[bins])) continue;
    int64_t b = static_cast<int64_t>(std::upper_bound(e, e + nedges, v) - e) - 1;
    if (b >= bins) b = bins - 1;  // v == the last edge
    const double w = weight != nullptr ? load_as<double>(weight->data, weight->dtype, i) : 1.0;
    h[b] += w;
    sum += w;
  }
  for (int64_t b = 0; b < bins; ++b) {
    double v = h[b];
    if (density) v = sum != 0 ? v / (sum * (e[b + 1] - e[b])) : v;
    store_as<double>(hist->data, hist->dtype, b, v);
  }
  return Error::Ok;
}

// resize(self, size[], memory_format?, out): the first min(numel) elements kept in order,
// the rest zero.
Error resize(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  const Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.out(3);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  Shape s;
  for (size_t i = 0; i < size.size(); ++i) {
    if (size[i] < 0 || !s.push(size[i])) return a.fail("invalid size"), a.error();
  }
  if (!resize_to(a, out, s)) return a.error();
  int64_t keep = in->numel() < s.numel() ? in->numel() : s.numel();
  copy_convert(in->data, in->dtype, out->data, out->dtype, keep);
  for (int64_t i = keep; i < s.numel(); ++i) store_as<int64_t>(out->data, out->dtype, i, 0);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::histogram.bin_ct", histogram);
EMBER_REGISTER_KERNEL("aten::histogram.bins_tensor", histogram_edges);
EMBER_REGISTER_KERNEL("aten::resize.default", resize);
EMBER_REGISTER_KERNEL("aten::kron.default", kron);
EMBER_REGISTER_KERNEL("aten::cumulative_trapezoid.x", cumulative_trapezoid);
EMBER_REGISTER_KERNEL("aten::cumulative_trapezoid.dx", cumulative_trapezoid);
EMBER_REGISTER_KERNEL("aten::searchsorted.Tensor", searchsorted);
EMBER_REGISTER_KERNEL("aten::bucketize.Tensor", bucketize);
EMBER_REGISTER_KERNEL("aten::histc.default", histc);
EMBER_REGISTER_KERNEL("aten::frexp.Tensor", frexp);
EMBER_REGISTER_KERNEL("aten::isin.Tensor_Tensor", isin);
EMBER_REGISTER_KERNEL("aten::isin.Tensor_Scalar", isin);
EMBER_REGISTER_KERNEL("aten::isin.Scalar_Tensor", isin);
EMBER_REGISTER_KERNEL("aten::rot90.default", rot90);
EMBER_REGISTER_KERNEL("aten::outer.default", outer);
EMBER_REGISTER_KERNEL("aten::ger.default", outer);
EMBER_REGISTER_KERNEL("aten::sum_to_size.default", sum_to_size);
EMBER_REGISTER_KERNEL("aten::dist.default", dist);
EMBER_REGISTER_KERNEL("aten::cross.default", cross);
EMBER_REGISTER_KERNEL("aten::linalg_cross.default", cross);
EMBER_REGISTER_KERNEL("aten::as_strided_scatter.default", as_strided_scatter);
EMBER_REGISTER_KERNEL("aten::unique_consecutive.default", unique<false>);
EMBER_REGISTER_KERNEL("aten::_unique2.default", unique<true>);
EMBER_REGISTER_KERNEL("aten::trapezoid.x", trapezoid);
EMBER_REGISTER_KERNEL("aten::trapz.x", trapezoid);
EMBER_REGISTER_KERNEL("aten::trapezoid.dx", trapezoid);
EMBER_REGISTER_KERNEL("aten::trapz.dx", trapezoid);

}  // namespace portable
}  // namespace ember
