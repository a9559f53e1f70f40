// Normalisation over trailing dims or channel groups, float32:
// layer_norm.default, native_layer_norm.default (-> out, mean, rstd), group_norm.default,
// native_group_norm.default (-> out, mean, rstd), rms_norm.default.
// Statistics accumulate in double; variance is biased (divides by the element count).
#include <cfloat>
#include <cmath>

#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

inline void row_stats(const float* x, int64_t n, double eps, float* mean_out, float* rstd_out) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  const double mean = n > 0 ? s / static_cast<double>(n) : 0.0;
  double ss = 0.0;
  for (int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const double var = n > 0 ? ss / static_cast<double>(n) : 0.0;
  *mean_out = static_cast<float>(mean);
  *rstd_out = static_cast<float>(1.0 / std::sqrt(var + eps));
}

bool check_affine(KernelArgs& a, const Tensor* t, int64_t numel) {
  if (t == nullptr) return true;
  if (!require_float(a, t)) return false;
  if (t->numel() != numel) return a.fail("weight/bias size does not match the normalised shape");
  return true;
}

struct LayerNormCall {
  Tensor* input;
  Span<const int64_t> shape;
  Tensor* weight;
  Tensor* bias;
  double eps;
  Tensor* out;
  Tensor* mean;  // optional outputs
  Tensor* rstd;
};

Error run_layer_norm(KernelContext& ctx, KernelArgs& a, const LayerNormCall& c) {
  if (!require_float(a, c.input) || !require_float(a, c.out)) return a.error();
  const int nd = static_cast<int>(c.shape.size());
  if (nd < 1 || nd > c.input->rank) return ctx.fail(Error::InvalidArgument, "normalized_shape does not fit the input");
  const int axis = c.input->rank - nd;
  int64_t inner = 1;
  for (int i = 0; i < nd; ++i) {
    if (c.input->sizes[axis + i] != c.shape[i]) {
      return ctx.fail(Error::InvalidArgument, "input's trailing dimensions differ from normalized_shape");
    }
    inner *= c.shape[i];
  }
  if (!check_affine(a, c.weight, inner) || !check_affine(a, c.bias, inner)) return a.error();
  if (!resize_out(a, c.out, c.input->sizes, c.input->rank)) return a.error();
  int64_t stat_sizes[kMaxRank];
  for (int d = 0; d < c.input->rank; ++d) stat_sizes[d] = d < axis ? c.input->sizes[d] : 1;
  Tensor* stats[2] = {c.mean, c.rstd};
  for (Tensor* t : stats) {
    if (t != nullptr && (!require_float(a, t) || !resize_out(a, t, stat_sizes, c.input->rank))) return a.error();
  }
  const int64_t rows = inner > 0 ? c.input->numel() / inner : 0;
  const float* x = c.input->data_as<float>();
  const float* w = c.weight != nullptr ? c.weight->data_as<float>() : nullptr;
  const float* b = c.bias != nullptr ? c.bias->data_as<float>() : nullptr;
  float* o = c.out->data_as<float>();
  float* mean_out = c.mean != nullptr ? c.mean->data_as<float>() : nullptr;
  float* rstd_out = c.rstd != nullptr ? c.rstd->data_as<float>() : nullptr;
  const double eps = c.eps;
  parallel_for_range(ctx, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * inner;
      float* orow = o + r * inner;
      float mean, rstd;
      row_stats(xr, inner, eps, &mean, &rstd);
      if (w != nullptr && b != nullptr) {
        for (int64_t i = 0; i < inner; ++i) orow[i] = (xr[i] - mean) * rstd * w[i] + b[i];
      } else if (w != nullptr) {
        for (int64_t i = 0; i < inner; ++i) orow[i] = (xr[i] - mean) * rstd * w[i];
      } else if (b != nullptr) {
        for (int64_t i = 0; i < inner; ++i) orow[i] = (xr[i] - mean) * rstd + b[i];
      } else {
        scale_shift(inner, xr, rstd, -mean * rstd, orow);
      }
      if (mean_out != nullptr) mean_out[r] = mean;
      if (rstd_out != nullptr) rstd_out[r] = rstd;
    }
  });
  return Error::Ok;
}

// layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable) -> out
Error layer_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  LayerNormCall c{a.tensor(0), a.int_list(1), a.optional_tensor(2), a.optional_tensor(3), a.scalar(4),
                  a.tensor(6), nullptr, nullptr};
  if (!a.ok()) return a.error();
  return run_layer_norm(ctx, a, c);
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps) -> (out, mean, rstd)
Error native_layer_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  LayerNormCall c{a.tensor(0), a.int_list(1), a.optional_tensor(2), a.optional_tensor(3), a.scalar(4),
                  a.tensor(5), a.tensor(6), a.tensor(7)};
  if (!a.ok()) return a.error();
  return run_layer_norm(ctx, a, c);
}

// rms_norm(input, normalized_shape, weight?, eps?) -> out; eps None means float32 epsilon.
Error rms_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(5)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> shape = a.int_list(1);
  Tensor* weight = a.optional_tensor(2);
  const double eps = a.is_none(3) ? static_cast<double>(FLT_EPSILON) : a.scalar(3);
  Tensor* out = a.tensor(4);
  if (!require_float(a, in) || !require_float(a, out)) return a.error();
  const int nd = static_cast<int>(shape.size());
  if (nd < 1 || nd > in->rank) return ctx.fail(Error::InvalidArgument, "normalized_shape does not fit the input");
  int64_t inner = 1;
  for (int i = 0; i < nd; ++i) {
    if (in->sizes[in->rank - nd + i] != shape[i]) {
      return ctx.fail(Error::InvalidArgument, "input's trailing dimensions differ from normalized_shape");
    }
    inner *= shape[i];
  }
  if (!check_affine(a, weight, inner)) return a.error();
  if (!resize_out(a, out, in->sizes, in->rank)) return a.error();
  const int64_t rows = inner > 0 ? in->numel() / inner : 0;
  const float* x = in->data_as<float>();
  const float* w = weight != nullptr ? weight->data_as<float>() : nullptr;
  float* o = out->data_as<float>();
  parallel_for_range(ctx, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = x + r * inner;
      float* orow = o + r * inner;
      double ss = 0.0;
      for (int64_t i = 0; i < inner; ++i) ss += static_cast<double>(xr[i]) * xr[i];
      const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(inner) + eps));
      if (w != nullptr) {
        for (int64_t i = 0; i < inner; ++i) orow[i] = xr[i] * scale * w[i];
      } else {
        for (int64_t i = 0; i < inner; ++i) orow[i] = xr[i] * scale;
      }
    }
  });
  return Error::Ok;
}

// Group norm over [N, C, *]: statistics per (n, group) of C/groups channels.
Error run_group_norm(KernelContext& ctx, KernelArgs& a, Tensor* in, Tensor* weight, Tensor* bias,
                     int64_t groups, double eps, Tensor* out, Tensor* mean, Tensor* rstd) {
  if (!require_float(a, in) || !require_float(a, out)) return a.error();
  if (in->rank < 2) return ctx.fail(Error::InvalidArgument, "group_norm input must be at least 2-D");
  const int64_t batch = in->sizes[0], channels = in->sizes[1];
  if (groups < 1 || channels % groups != 0) return ctx.fail(Error::InvalidArgument, "channels not divisible by groups");
  int64_t hw = 1;
  for (int d = 2; d < in->rank; ++d) hw *= in->sizes[d];
  if (!check_affine(a, weight, channels) || !check_affine(a, bias, channels)) return a.error();
  if (!resize_out(a, out, in->sizes, in->rank)) return a.error();
  const int64_t stat_sizes[2] = {batch, groups};
  Tensor* stats[2] = {mean, rstd};
  for (Tensor* t : stats) {
    if (t != nullptr && (!require_float(a, t) || !resize_out(a, t, stat_sizes, 2))) return a.error();
  }
  const int64_t cpg = channels / groups;
  const float* x = in->data_as<float>();
  const float* w = weight != nullptr ? weight->data_as<float>() : nullptr;
  const float* b = bias != nullptr ? bias->data_as<float>() : nullptr;
  float* o = out->data_as<float>();
  float* mean_out = mean != nullptr ? mean->data_as<float>() : nullptr;
  float* rstd_out = rstd != nullptr ? rstd->data_as<float>() : nullptr;
  parallel_for_range(ctx, batch * groups, 1, [&](int64_t begin, int64_t end) {
    for (int64_t ng = begin; ng < end; ++ng) {
      const int64_t g = ng % groups;
      const float* xg = x + ng * cpg * hw;  // (n, g) groups are contiguous
      float* og = o + ng * cpg * hw;
      float m, rs;
      row_stats(xg, cpg * hw, eps, &m, &rs);
      for (int64_t ci = 0; ci < cpg; ++ci) {
        const int64_t c = g * cpg + ci;
        const float sc = rs * (w != nullptr ? w[c] : 1.0f);
        const float sh = (b != nullptr ? b[c] : 0.0f) - m * sc;
        scale_shift(hw, xg + ci * hw, sc, sh, og + ci * hw);
      }
      if (mean_out != nullptr) mean_out[ng] = m;
      if (rstd_out != nullptr) rstd_out[ng] = rs;
    }
  });
  return Error::Ok;
}

// group_norm(input, num_groups, weight?, bias?, eps, cudnn_enabled) -> out
Error group_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Tensor* in = a.tensor(0);
  int64_t groups = a.int_value(1);
  Tensor* weight = a.optional_tensor(2);
  Tensor* bias = a.optional_tensor(3);
  double eps = a.scalar(4);
  Tensor* out = a.tensor(6);
  if (!a.ok()) return a.error();
  return run_group_norm(ctx, a, in, weight, bias, groups, eps, out, nullptr, nullptr);
}

// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd)
Error native_group_norm(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(11)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* weight = a.optional_tensor(1);
  Tensor* bias = a.optional_tensor(2);
  const int64_t nn = a.int_value(3), c = a.int_value(4), hw = a.int_value(5), groups = a.int_value(6);
  double eps = a.scalar(7);
  Tensor* out = a.tensor(8);
  Tensor* mean = a.tensor(9);
  Tensor* rstd = a.tensor(10);
  if (!a.ok()) return a.error();
  if (in->rank < 2 || in->sizes[0] != nn || in->sizes[1] != c || (c > 0 && nn > 0 && in->numel() != nn * c * hw)) {
    return ctx.fail(Error::InvalidArgument, "N, C, HxW do not match the input");
  }
  return run_group_norm(ctx, a, in, weight, bias, groups, eps, out, mean, rstd);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::layer_norm.default", layer_norm);
EMBER_REGISTER_KERNEL("aten::native_layer_norm.default", native_layer_norm);
EMBER_REGISTER_KERNEL("aten::rms_norm.default", rms_norm);
EMBER_REGISTER_KERNEL("aten::group_norm.default", group_norm);
EMBER_REGISTER_KERNEL("aten::native_group_norm.default", native_group_norm);

}  // namespace portable
}  // namespace ember
