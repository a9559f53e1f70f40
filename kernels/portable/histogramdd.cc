// Multi-dimensional histograms with uniform bins (int[] bins):
//   aten::histogramdd.default(self, bins, range?, weight?, density) -> (hist, bin_edges...)
//   aten::_histogramdd_bin_edges.default(self, bins, *, range?, weight?, density) -> bin_edges...
//   aten::_histogramdd_from_bin_cts.default(self, bins, *, range?, weight?, density) -> hist
// self [..., D] holds points of D coordinates (D = len(bins)); weight (optional) has self's
// leading shape. Along dimension d the edges are linspace(lo, hi, bins[d] + 1), where
// [lo, hi] = range[2d : 2d + 2] or the data's min and max (0 and 0 for no points), widened
// by 0.5 either side when lo == hi. A point outside the edges (or NaN) is dropped; the
// last bin includes its right edge. Bins are found as ATen does (linear interpolation,
// corrected by a local search over the edges). density divides by the total and the bin
// volumes. float32 and float64 (as ATen's CPU kernel). Bins given as edge tensors: see
// histogramdd_tensor_bins below.
#include <algorithm>
#include <cmath>

#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// The parsed arguments (self, bins, range, weight, density).
struct HistArgs {
  const Tensor* self = nullptr;
  Span<const int64_t> bins;
  const double* range = nullptr;  // 2 * D values, or null
  const Tensor* weight = nullptr;
  bool density = false;
  int64_t dims = 0;    // D
  int64_t points = 0;  // N
  int64_t edge_count = 0;  // sum of bins[d] + 1
};

bool parse(KernelArgs& a, HistArgs& h) {
  h.self = a.tensor(0);
  h.bins = a.int_list(1);
  h.weight = a.optional_tensor(3);
  h.density = a.bool_value(4);
  if (!a.ok() || !require_contiguous(a, h.self) || !require_contiguous(a, h.weight)) return false;
  if (!a.is_none(2)) {
    if (a.at(2).tag != ValueTag::DoubleList) return a.fail("range must be a list of floats");
    Span<const double> r = a.at(2).as_double_list;
    if (r.size() != 2 * h.bins.size()) return a.fail("range must hold two values (min, max) per dimension");
    h.range = r.data();
  }
  const Tensor* x = h.self;
  if (x->dtype != ScalarType::Float32 && x->dtype != ScalarType::Float64) {
    return a.fail("only float32 and float64 inputs are supported");
  }
  h.dims = static_cast<int64_t>(h.bins.size());
  if (h.dims < 1 || h.dims > kMaxRank) return a.fail("bins must have between 1 and 16 entries");
  if (x->rank < 1 || x->sizes[x->rank - 1] != h.dims) {
    return a.fail("the last dimension of self must equal the number of bins entries");
  }
  h.points = x->numel() / h.dims;
  for (int64_t d = 0; d < h.dims; ++d) {
    if (h.bins[d] <= 0) return a.fail("every bins entry must be positive");
    h.edge_count += h.bins[d] + 1;
  }
  if (h.weight != nullptr) {
    if (h.weight->dtype != x->dtype) return a.fail("weight must have self's dtype");
    bool same = h.weight->rank == x->rank - 1;
    for (int d = 0; same && d < x->rank - 1; ++d) same = h.weight->sizes[d] == x->sizes[d];
    if (!same) return a.fail("weight must have the shape of self without its last dimension");
  }
  return true;
}

// Writes every dimension's edges (bins[d] + 1 each, concatenated) to `edges`.
template <typename C>
bool compute_edges(KernelArgs& a, const HistArgs& h, C* edges) {
  const C* x = h.self->data_as<C>();
  C* e = edges;
  for (int64_t d = 0; d < h.dims; ++d) {
    double lo = 0, hi = 0;
    if (h.range != nullptr) {
      lo = h.range[2 * d];
      hi = h.range[2 * d + 1];
    } else if (h.points > 0) {
      lo = hi = static_cast<double>(x[d]);
      for (int64_t i = 1; i < h.points; ++i) {
        const double v = static_cast<double>(x[i * h.dims + d]);
        if (v < lo || v != v) lo = v;
        if (v > hi || v != v) hi = v;
      }
    }
    if (!std::isfinite(lo) || !std::isfinite(hi)) return a.fail("the histogram range must be finite");
    if (lo > hi) return a.fail("the histogram range must have min <= max");
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    // linspace as ATen computes it: from both ends towards the middle.
    const int64_t steps = h.bins[d] + 1;
    const C start = static_cast<C>(lo), end = static_cast<C>(hi);
    const C step = (end - start) / static_cast<C>(steps - 1);
    for (int64_t i = 0; i < steps; ++i) {
      e[i] = i < steps / 2 ? start + step * static_cast<C>(i) : end - step * static_cast<C>(steps - i - 1);
    }
    e += steps;
  }
  return true;
}

template <typename C>
void fill_histogram(const HistArgs& h, const C* edges, Tensor& hist) {
  C* out = hist.data_as<C>();
  const int64_t cells = hist.numel();
  for (int64_t i = 0; i < cells; ++i) out[i] = C(0);
  const C* x = h.self->data_as<C>();
  for (int64_t i = 0; i < h.points; ++i) {
    int64_t cell = 0;
    bool inside = true;
    const C* e = edges;
    for (int64_t d = 0; d < h.dims && inside; ++d) {
      const int64_t n = h.bins[d] + 1;
      const C v = x[i * h.dims + d], lo = e[0], hi = e[n - 1];
      if (!(v >= lo && v <= hi)) {
        inside = false;
        break;
      }
      int64_t pos = static_cast<int64_t>((v - lo) * static_cast<C>(n - 1) / (hi - lo));
      // Local search: the last edge <= v among edges [pos - 1, pos + 2).
      const int64_t first = pos - 1 > 0 ? pos - 1 : 0, last = pos + 2 < n ? pos + 2 : n;
      pos = first;
      while (pos < last && !(v < e[pos])) ++pos;
      pos -= 1;
      if (pos == n - 1) pos -= 1;
      cell = cell * h.bins[d] + pos;
      e += n;
    }
    if (inside) out[cell] += h.weight != nullptr ? h.weight->data_as<C>()[i] : C(1);
  }
  if (!h.density) return;
  C total = 0;
  for (int64_t i = 0; i < cells; ++i) total += out[i];
  for (int64_t i = 0; i < cells; ++i) out[i] /= total;
  int64_t stride = cells;
  const C* e = edges;
  for (int64_t d = 0; d < h.dims; ++d) {
    stride /= h.bins[d];
    for (int64_t i = 0; i < cells; ++i) {
      const int64_t b = (i / stride) % h.bins[d];
      out[i] /= e[b + 1] - e[b];
    }
    e += h.bins[d] + 1;
  }
}

// Computes the edges into scratch, then writes the requested outputs.
template <typename C>
Error run(KernelContext& ctx, KernelArgs& a, const HistArgs& h, Tensor* hist, Tensor* const* edge_outs) {
  C* edges = static_cast<C*>(ctx.allocate_temp(static_cast<size_t>(h.edge_count) * sizeof(C)));
  if (edges == nullptr) return a.fail("out of scratch memory for the bin edges", Error::OutOfMemory), a.error();
  if (!compute_edges(a, h, edges)) return a.error();
  if (edge_outs != nullptr) {
    const C* e = edges;
    for (int64_t d = 0; d < h.dims; ++d) {
      Tensor* out = edge_outs[d];
      const int64_t n = h.bins[d] + 1;
      if (out->dtype != h.self->dtype) return a.fail("bin_edges must have self's dtype"), a.error();
      if (!resize_out(a, out, &n, 1)) return a.error();
      for (int64_t i = 0; i < n; ++i) out->data_as<C>()[i] = e[i];
      e += n;
    }
  }
  if (hist != nullptr) {
    if (hist->dtype != h.self->dtype) return a.fail("hist must have self's dtype"), a.error();
    if (!resize_out(a, hist, h.bins.data(), static_cast<int>(h.dims))) return a.error();
    fill_histogram(h, edges, *hist);
  }
  return Error::Ok;
}

// Shared by the three ops: 5 arguments, then the hist output (if any), then D edge outputs (if any).
Error histogramdd_impl(KernelContext& ctx, EValue** args, size_t n, bool has_hist, bool has_edges) {
  KernelArgs a(ctx, args, n);
  HistArgs h;
  if (n < 6) return a.fail("wrong number of arguments"), a.error();
  if (!parse(a, h)) return a.error();
  const size_t want = 5 + (has_hist ? 1 : 0) + (has_edges ? static_cast<size_t>(h.dims) : 0);
  if (!a.expect(want)) return a.error();
  Tensor* hist = has_hist ? a.out(5) : nullptr;
  Tensor* edges[kMaxRank] = {};
  for (int64_t d = 0; has_edges && d < h.dims; ++d) edges[d] = a.out(5 + (has_hist ? 1 : 0) + d);
  if (!a.ok()) return a.error();
  if (h.self->dtype == ScalarType::Float64) return run<double>(ctx, a, h, hist, has_edges ? edges : nullptr);
  return run<float>(ctx, a, h, hist, has_edges ? edges : nullptr);
}

Error histogramdd(KernelContext& ctx, EValue** args, size_t n) { return histogramdd_impl(ctx, args, n, true, true); }
Error bin_edges(KernelContext& ctx, EValue** args, size_t n) { return histogramdd_impl(ctx, args, n, false, true); }
Error from_bin_cts(KernelContext& ctx, EValue** args, size_t n) { return histogramdd_impl(ctx, args, n, true, false); }

// Bins given as D tensors of increasing edges (histogramdd.TensorList_bins(self, bins[],
// range?, weight?, density, hist, bin_edges...) and _histogramdd_from_bin_tensors(self, bins[],
// *, weight?, density, hist)): a coordinate falls in bin b when edges[b] <= v < edges[b + 1]
// (binary search, as ATen does for tensor bins), the last edge inclusive; range is unused.
Error histogramdd_tensor_bins(KernelContext& ctx, EValue** args, size_t n, size_t weight_index, bool has_edges) {
  KernelArgs a(ctx, args, n);
  const size_t hist_index = weight_index + 2;
  if (n < hist_index + 1) return a.fail("wrong number of arguments"), a.error();
  const Tensor* self = a.tensor(0);
  Span<Tensor* const> bins = a.tensor_list(1);
  const Tensor* weight = a.optional_tensor(weight_index);
  const bool density = a.bool_value(weight_index + 1);
  if (!a.ok() || !require_contiguous(a, self) || !require_contiguous(a, weight)) return a.error();
  const int64_t dims = static_cast<int64_t>(bins.size());
  if (!a.expect(hist_index + 1 + (has_edges ? static_cast<size_t>(dims) : 0))) return a.error();
  if (dims < 1 || dims > kMaxRank) return a.fail("bins must hold between 1 and 16 edge tensors"), a.error();
  if (self->rank < 1 || self->sizes[self->rank - 1] != dims) {
    return a.fail("the last dimension of self must equal the number of bin tensors"), a.error();
  }
  int64_t hist_sizes[kMaxRank], cells = 1;
  for (int64_t d = 0; d < dims; ++d) {
    const Tensor* e = bins[d];
    if (!require_contiguous(a, e)) return a.error();
    if (e->rank != 1 || e->numel() < 2) return a.fail("every bins tensor must be 1-D with at least 2 edges"), a.error();
    hist_sizes[d] = e->numel() - 1;
    cells *= hist_sizes[d];
  }
  Tensor* hist = a.out(hist_index);
  if (!a.ok() || !resize_out(a, hist, hist_sizes, static_cast<int>(dims))) return a.error();
  for (int64_t d = 0; has_edges && d < dims; ++d) {
    Tensor* out = a.out(hist_index + 1 + static_cast<size_t>(d));
    const int64_t count = bins[d]->numel();
    if (!a.ok() || !resize_out(a, out, &count, 1)) return a.error();
    for (int64_t i = 0; i < count; ++i) {
      store_as<double>(out->data, out->dtype, i, load_as<double>(bins[d]->data, bins[d]->dtype, i));
    }
  }
  double* h = static_cast<double*>(ctx.allocate_temp(static_cast<size_t>(cells) * sizeof(double)));
  if (h == nullptr) return a.fail("histogramdd needs temp memory", Error::OutOfMemory), a.error();
  for (int64_t c = 0; c < cells; ++c) h[c] = 0;
  auto edge = [&](int64_t d, int64_t i) { return load_as<double>(bins[d]->data, bins[d]->dtype, i); };
  const int64_t points = self->numel() / dims;
  double total = 0;
  for (int64_t p = 0; p < points; ++p) {
    int64_t cell = 0;
    bool inside = true;
    for (int64_t d = 0; d < dims && inside; ++d) {
      const double v = load_as<double>(self->data, self->dtype, p * dims + d);
      const int64_t nb = hist_sizes[d];
      inside = v >= edge(d, 0) && v <= edge(d, nb);
      int64_t lo = 0, hi = nb + 1;  // first edge > v (upper_bound)
      while (inside && lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (edge(d, mid) <= v) lo = mid + 1;
        else hi = mid;
      }
      const int64_t b = std::min(lo - 1, nb - 1);
      cell = cell * nb + b;
    }
    if (!inside) continue;
    const double w = weight != nullptr ? load_as<double>(weight->data, weight->dtype, p) : 1.0;
    h[cell] += w;
    total += w;
  }
  for (int64_t c = 0; c < cells; ++c) {
    double v = h[c];
    if (density && total != 0) {
      double volume = 1;
      for (int64_t d = dims - 1, rest = c; d >= 0; --d) {
        const int64_t b = rest % hist_sizes[d];
        rest /= hist_sizes[d];
        volume *= edge(d, b + 1) - edge(d, b);
      }
      v /= total * volume;
    }
    store_as<double>(hist->data, hist->dtype, c, v);
  }
  return Error::Ok;
}

Error histogramdd_bin_tensors(KernelContext& ctx, EValue** args, size_t n) {
  return histogramdd_tensor_bins(ctx, args, n, 3, true);
}
Error from_bin_tensors(KernelContext& ctx, EValue** args, size_t n) {
  return histogramdd_tensor_bins(ctx, args, n, 2, false);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::histogramdd.TensorList_bins", histogramdd_bin_tensors);
EMBER_REGISTER_KERNEL("aten::_histogramdd_from_bin_tensors.default", from_bin_tensors);
EMBER_REGISTER_KERNEL("aten::histogramdd.default", histogramdd);
EMBER_REGISTER_KERNEL("aten::_histogramdd_bin_edges.default", bin_edges);
EMBER_REGISTER_KERNEL("aten::_histogramdd_from_bin_cts.default", from_bin_cts);

}  // namespace portable
}  // namespace ember
