// Reductions over slices and segments: segment_reduce (lengths or offsets), mode (most
// frequent value along a dim), renorm (per-slice p-norm capping).
#include <cmath>
#include <limits>

#include "kernels/portable/util/elementwise_ops.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

enum class SegReduce { Sum, Mean, Max, Min, Prod };

// segment_reduce(data, reduce, *, lengths?, indices?, offsets?, axis, unsafe, initial?, out)
Error segment_reduce(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  const Tensor* data = a.tensor(0);
  const Tensor* lengths = a.optional_tensor(2);
  const Tensor* offsets = a.optional_tensor(4);
  int64_t axis = a.int_value(5);
  double initial = 0;
  bool has_initial = a.optional_scalar(7, &initial);
  Tensor* out = a.out(8);
  if (!a.ok() || !require_contiguous(a, data)) return a.error();
  SegReduce r;
  if (a.string_is(1, "sum")) r = SegReduce::Sum;
  else if (a.string_is(1, "mean")) r = SegReduce::Mean;
  else if (a.string_is(1, "max")) r = SegReduce::Max;
  else if (a.string_is(1, "min")) r = SegReduce::Min;
  else if (a.string_is(1, "prod")) r = SegReduce::Prod;
  else return a.fail("unknown reduce"), a.error();
  if ((lengths == nullptr) == (offsets == nullptr)) return a.fail("give exactly one of lengths and offsets"), a.error();
  const Tensor* seg = lengths ? lengths : offsets;
  if (seg->rank != 1) return a.fail("only 1-D lengths/offsets are supported", Error::NotSupported), a.error();
  axis = wrap_dim(axis, data->rank);
  if (axis < 0 || data->rank == 0) return a.fail("axis out of range"), a.error();
  int64_t segs = lengths ? seg->numel() : seg->numel() - 1;
  if (segs < 0) return a.fail("offsets must not be empty"), a.error();
  Shape s(*data);
  s.d[axis] = segs;
  if (!resize_to(a, out, s)) return a.error();
  int64_t outer = 1, inner = 1, size = data->sizes[axis];
  for (int d = 0; d < axis; ++d) outer *= data->sizes[d];
  for (int d = static_cast<int>(axis) + 1; d < data->rank; ++d) inner *= data->sizes[d];
  double empty_value = has_initial ? initial
                       : r == SegReduce::Sum ? 0.0
                       : r == SegReduce::Prod ? 1.0
                       : r == SegReduce::Max ? -INFINITY
                       : r == SegReduce::Min ? INFINITY
                                             : NAN;
  for (int64_t k = 0, start = 0; k < segs; ++k) {
    int64_t begin = lengths ? start : load_as<int64_t>(seg->data, seg->dtype, k);
    int64_t len = lengths ? load_as<int64_t>(seg->data, seg->dtype, k)
                          : load_as<int64_t>(seg->data, seg->dtype, k + 1) - begin;
    start = begin + len;
    if (begin < 0 || len < 0 || begin + len > size) return a.fail("segments exceed the data", Error::OutOfBounds), a.error();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double acc = has_initial ? initial : (r == SegReduce::Prod ? 1.0 : r == SegReduce::Max ? -INFINITY
                                                                       : r == SegReduce::Min ? INFINITY : 0.0);
        for (int64_t j = 0; j < len; ++j) {
          double v = load_as<double>(data->data, data->dtype, (o * size + begin + j) * inner + i);
          switch (r) {
            case SegReduce::Sum:
            case SegReduce::Mean: acc += v; break;
            case SegReduce::Prod: acc *= v; break;
            case SegReduce::Max: acc = (std::isnan(v) || v > acc) ? v : acc; break;
            case SegReduce::Min: acc = (std::isnan(v) || v < acc) ? v : acc; break;
          }
        }
        if (r == SegReduce::Mean && len > 0) acc /= static_cast<double>(len + (has_initial ? 1 : 0));
        if (len == 0) acc = empty_value;
        store_as<double>(out->data, out->dtype, (o * segs + k) * inner + i, acc);
      }
    }
  }
  return Error::Ok;
}

// mode(self, dim, keepdim, values, indices): the most frequent value along dim (the
// smallest among ties) and the last index where it occurs.
Error mode(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  int64_t dim = a.int_value(1);
  bool keepdim = a.bool_value(2);
  Tensor* values = a.out(3);
  Tensor* indices = a.out(4);
  if (!a.ok() || !require_contiguous(a, in)) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0) return a.fail("dim out of range"), a.error();
  int64_t outer = 1, inner = 1, size = in->rank > 0 ? in->sizes[d] : 1;
  for (int k = 0; k < d; ++k) outer *= in->sizes[k];
  for (int k = static_cast<int>(d) + 1; k < in->rank; ++k) inner *= in->sizes[k];
  if (size == 0) return a.fail("mode of an empty dim"), a.error();
  Shape s;
  for (int k = 0; k < in->rank; ++k) {
    if (k != d) s.push(in->sizes[k]);
    else if (keepdim) s.push(1);
  }
  if (!resize_to(a, values, s) || !resize_to(a, indices, s)) return a.error();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return load_as<double>(in->data, in->dtype, (o * size + k) * inner + i); };
      double best = 0;
      int64_t best_count = 0, best_index = 0;
      for (int64_t k = 0; k < size; ++k) {
        double v = at(k);
        int64_t count = 0, last = k;
        for (int64_t j = 0; j < size; ++j) {
          if (at(j) == v) {
            ++count;
            last = j;
          }
        }
        if (count > best_count || (count == best_count && v < best)) {
          best = v;
          best_count = count;
          best_index = last;
        }
      }
      store_as<double>(values->data, values->dtype, o * inner + i, best);
      store_as<int64_t>(indices->data, indices->dtype, o * inner + i, best_index);
    }
  }
  return Error::Ok;
}

// renorm(self, p, dim, maxnorm, out): each slice along dim with p-norm above maxnorm is
// scaled to maxnorm.
Error renorm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  const Tensor* in = a.tensor(0);
  double p = a.scalar(1);
  int64_t dim = a.int_value(2);
  double maxnorm = a.scalar(3);
  Tensor* out = a.out(4);
  if (!a.ok() || !require_contiguous(a, in) || !resize_like(a, out, *in)) return a.error();
  int64_t d = wrap_dim(dim, in->rank);
  if (d < 0 || in->rank == 0) return a.fail("dim out of range"), a.error();
  if (p <= 0) return a.fail("p must be positive"), a.error();
  int64_t outer = 1, inner = 1, size = in->sizes[d];
  for (int k = 0; k < d; ++k) outer *= in->sizes[k];
  for (int k = static_cast<int>(d) + 1; k < in->rank; ++k) inner *= in->sizes[k];
  for (int64_t s = 0; s < size; ++s) {
    double acc = 0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        double v = std::fabs(load_as<double>(in->data, in->dtype, (o * size + s) * inner + i));
        acc = std::isinf(p) ? (v > acc ? v : acc) : acc + std::pow(v, p);
      }
    }
    double norm = std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
    double scale = norm > maxnorm ? maxnorm / (norm + 1e-7) : 1.0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t e = (o * size + s) * inner + i;
        store_as<double>(out->data, out->dtype, e, load_as<double>(in->data, in->dtype, e) * scale);
      }
    }
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::segment_reduce.default", segment_reduce);
EMBER_REGISTER_KERNEL("aten::mode.default", mode);
EMBER_REGISTER_KERNEL("aten::renorm.default", renorm);

}  // namespace portable
}  // namespace ember
