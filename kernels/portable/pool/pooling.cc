// Pooling over the last two (or one) dimensions of float32 [N, C, H, W] / [C, H, W] tensors:
// max_pool2d (+ _with_indices), avg_pool2d, adaptive_avg_pool2d (+ the _adaptive variant),
// adaptive_max_pool2d, max_pool1d, avg_pool1d. Output sizes, ceil_mode, padding, NaN
// propagation and the averaging divisor follow PyTorch. Parallel over (N*C) planes.
#include <cmath>
#include <limits>

#include "kernels/portable/pool/pool_window.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

using Window = PoolWindow<2>;

struct Planes {
  int64_t planes, h, w, oh, ow;
};

// Validates the input (rank spatial+1 or spatial+2) and resizes the outputs to [..., oh, ow].
bool prepare(KernelArgs& a, const Tensor* in, int spatial, const Window& win, Tensor* out,
             Tensor* indices, Planes& pl) {
  if (!require_float(a, in) || !require_float(a, out)) return false;
  if (in->rank != spatial + 1 && in->rank != spatial + 2) return a.fail("pooling input has the wrong rank");
  pl.h = spatial == 2 ? in->sizes[in->rank - 2] : 1;
  pl.w = in->sizes[in->rank - 1];
  pl.planes = 1;
  for (int d = 0; d < in->rank - spatial; ++d) pl.planes *= in->sizes[d];
  pl.oh = pooled_size(pl.h, win.kernel[0], win.pad[0], win.stride[0], win.dilation[0], win.ceil_mode);
  pl.ow = pooled_size(pl.w, win.kernel[1], win.pad[1], win.stride[1], win.dilation[1], win.ceil_mode);
  if (pl.oh < 1 || pl.ow < 1) return a.fail("pooling output would be empty");
  int64_t sizes[kMaxRank];
  for (int d = 0; d < in->rank; ++d) sizes[d] = in->sizes[d];
  if (spatial == 2) sizes[in->rank - 2] = pl.oh;
  sizes[in->rank - 1] = pl.ow;
  if (!resize_out(a, out, sizes, in->rank)) return false;
  if (indices != nullptr) {
    if (indices->dtype != ScalarType::Int64) return a.fail("indices must be int64");
    if (!resize_out(a, indices, sizes, in->rank)) return false;
  }
  return true;
}

void max_pool(KernelContext& ctx, const Planes& pl, const Window& win, const float* x, float* out,
              int64_t* indices) {
  parallel_for_range(ctx, pl.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float* xp = x + c * pl.h * pl.w;
      float* op = out + c * pl.oh * pl.ow;
      int64_t* ip = indices != nullptr ? indices + c * pl.oh * pl.ow : nullptr;
      for (int64_t oy = 0; oy < pl.oh; ++oy) {
        const int64_t y0 = oy * win.stride[0] - win.pad[0];
        for (int64_t ox = 0; ox < pl.ow; ++ox) {
          const int64_t x0 = ox * win.stride[1] - win.pad[1];
          float best = -std::numeric_limits<float>::infinity();
          int64_t best_index = -1;
          for (int64_t ky = 0; ky < win.kernel[0]; ++ky) {
            const int64_t iy = y0 + ky * win.dilation[0];
            if (iy < 0 || iy >= pl.h) continue;
            for (int64_t kx = 0; kx < win.kernel[1]; ++kx) {
              const int64_t ix = x0 + kx * win.dilation[1];
              if (ix < 0 || ix >= pl.w) continue;
              const float v = xp[iy * pl.w + ix];
              if (best_index < 0 || v > best || std::isnan(v)) {
                best = v;
                best_index = iy * pl.w + ix;
                if (std::isnan(v)) goto done;  // NaN propagates; keep its index
              }
            }
          }
        done:
          op[oy * pl.ow + ox] = best;
          if (ip != nullptr) ip[oy * pl.ow + ox] = best_index;
        }
      }
    }
  });
}

void avg_pool(KernelContext& ctx, const Planes& pl, const Window& win, bool count_include_pad,
              int64_t divisor_override, const float* x, float* out) {
  parallel_for_range(ctx, pl.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float* xp = x + c * pl.h * pl.w;
      float* op = out + c * pl.oh * pl.ow;
      for (int64_t oy = 0; oy < pl.oh; ++oy) {
        int64_t y0 = oy * win.stride[0] - win.pad[0];
        int64_t y1 = y0 + win.kernel[0] < pl.h + win.pad[0] ? y0 + win.kernel[0] : pl.h + win.pad[0];
        const int64_t pool_h = y1 - y0;
        if (y0 < 0) y0 = 0;
        if (y1 > pl.h) y1 = pl.h;
        for (int64_t ox = 0; ox < pl.ow; ++ox) {
          int64_t x0 = ox * win.stride[1] - win.pad[1];
          int64_t x1 = x0 + win.kernel[1] < pl.w + win.pad[1] ? x0 + win.kernel[1] : pl.w + win.pad[1];
          const int64_t pool_size = pool_h * (x1 - x0);
          if (x0 < 0) x0 = 0;
          if (x1 > pl.w) x1 = pl.w;
          if (y0 >= y1 || x0 >= x1) {
            op[oy * pl.ow + ox] = 0.0f;
            continue;
          }
          float sum = 0.0f;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) sum += xp[iy * pl.w + ix];
          }
          const int64_t divisor = divisor_override != 0 ? divisor_override
                                  : count_include_pad   ? pool_size
                                                        : (y1 - y0) * (x1 - x0);
          op[oy * pl.ow + ox] = sum / static_cast<float>(divisor);
        }
      }
    }
  });
}

// max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode) -> out [, indices]
template <int kSpatial, bool kWithIndices>
Error max_pool_op(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kWithIndices ? 8 : 7)) return a.error();
  Tensor* in = a.tensor(0);
  Window win;
  if (!read_pool_window(a, kSpatial, 1, 2, 3, 4, win)) return a.error();
  win.ceil_mode = a.bool_value(5);
  Tensor* out = a.tensor(6);
  Tensor* indices = kWithIndices ? a.tensor(7) : nullptr;
  if (!a.ok()) return a.error();
  Planes pl;
  if (!prepare(a, in, kSpatial, win, out, indices, pl)) return a.error();
  max_pool(ctx, pl, win, in->data_as<float>(), out->data_as<float>(),
           indices != nullptr ? indices->data_as<int64_t>() : nullptr);
  return Error::Ok;
}

// avg_pool2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?)
Error avg_pool2d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* in = a.tensor(0);
  Window win;
  if (!read_pool_window(a, 2, 1, 2, 3, 0, win)) return a.error();
  win.ceil_mode = a.bool_value(4);
  const bool count_include_pad = a.bool_value(5);
  const int64_t divisor = a.optional_int(6, 0);
  Tensor* out = a.tensor(7);
  if (!a.ok()) return a.error();
  if (divisor < 0 || (!a.is_none(6) && divisor == 0)) return ctx.fail(Error::InvalidArgument, "divisor must be non-zero");
  Planes pl;
  if (!prepare(a, in, 2, win, out, nullptr, pl)) return a.error();
  avg_pool(ctx, pl, win, count_include_pad, divisor, in->data_as<float>(), out->data_as<float>());
  return Error::Ok;
}

// avg_pool1d(self, kernel_size, stride, padding, ceil_mode, count_include_pad)
Error avg_pool1d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Tensor* in = a.tensor(0);
  Window win;
  if (!read_pool_window(a, 1, 1, 2, 3, 0, win)) return a.error();
  win.ceil_mode = a.bool_value(4);
  const bool count_include_pad = a.bool_value(5);
  Tensor* out = a.tensor(6);
  if (!a.ok()) return a.error();
  Planes pl;
  if (!prepare(a, in, 1, win, out, nullptr, pl)) return a.error();
  avg_pool(ctx, pl, win, count_include_pad, 0, in->data_as<float>(), out->data_as<float>());
  return Error::Ok;
}

// Adaptive pooling: output cell o covers [floor(o*in/out), ceil((o+1)*in/out)).
inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ceil_div((o + 1) * in, out); }

bool prepare_adaptive(KernelArgs& a, const Tensor* in, Span<const int64_t> size, Tensor* out,
                      Tensor* indices, Planes& pl) {
  if (!require_float(a, in) || !require_float(a, out)) return false;
  if (in->rank != 3 && in->rank != 4) return a.fail("adaptive pooling expects [N, C, H, W] or [C, H, W]");
  if (size.size() != 2 && size.size() != 1) return a.fail("output_size must have 2 entries");
  pl.h = in->sizes[in->rank - 2];
  pl.w = in->sizes[in->rank - 1];
  pl.oh = list_at(size, 0, 1);
  pl.ow = list_at(size, 1, 1);
  if (pl.oh < 0 || pl.ow < 0) return a.fail("output_size must be non-negative");
  if ((pl.h == 0 || pl.w == 0) && pl.oh * pl.ow > 0) return a.fail("input plane is empty");
  pl.planes = in->rank == 4 ? in->sizes[0] * in->sizes[1] : in->sizes[0];
  int64_t sizes[4];
  for (int d = 0; d < in->rank; ++d) sizes[d] = in->sizes[d];
  sizes[in->rank - 2] = pl.oh;
  sizes[in->rank - 1] = pl.ow;
  if (!resize_out(a, out, sizes, in->rank)) return false;
  if (indices != nullptr) {
    if (indices->dtype != ScalarType::Int64) return a.fail("indices must be int64");
    if (!resize_out(a, indices, sizes, in->rank)) return false;
  }
  return true;
}

// adaptive_avg_pool2d(self, output_size) -> out
Error adaptive_avg_pool2d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.tensor(2);
  if (!a.ok()) return a.error();
  Planes pl;
  if (!prepare_adaptive(a, in, size, out, nullptr, pl)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  parallel_for_range(ctx, pl.planes, 4, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float* xp = x + c * pl.h * pl.w;
      for (int64_t oy = 0; oy < pl.oh; ++oy) {
        const int64_t y0 = adaptive_start(oy, pl.h, pl.oh), y1 = adaptive_end(oy, pl.h, pl.oh);
        for (int64_t ox = 0; ox < pl.ow; ++ox) {
          const int64_t x0 = adaptive_start(ox, pl.w, pl.ow), x1 = adaptive_end(ox, pl.w, pl.ow);
          float sum = 0.0f;
          for (int64_t iy = y0; iy < y1; ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) sum += xp[iy * pl.w + ix];
          }
          o[(c * pl.oh + oy) * pl.ow + ox] = sum / static_cast<float>((y1 - y0) * (x1 - x0));
        }
      }
    }
  });
  return Error::Ok;
}

// adaptive_max_pool2d(self, output_size) -> (out, indices)
Error adaptive_max_pool2d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.tensor(2);
  Tensor* indices = a.tensor(3);
  if (!a.ok()) return a.error();
  Planes pl;
  if (!prepare_adaptive(a, in, size, out, indices, pl)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  int64_t* idx = indices->data_as<int64_t>();
  parallel_for_range(ctx, pl.planes, 4, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const float* xp = x + c * pl.h * pl.w;
      for (int64_t oy = 0; oy < pl.oh; ++oy) {
        const int64_t y0 = adaptive_start(oy, pl.h, pl.oh), y1 = adaptive_end(oy, pl.h, pl.oh);
        for (int64_t ox = 0; ox < pl.ow; ++ox) {
          const int64_t x0 = adaptive_start(ox, pl.w, pl.ow), x1 = adaptive_end(ox, pl.w, pl.ow);
          float best = xp[y0 * pl.w + x0];
          int64_t best_index = y0 * pl.w + x0;
          for (int64_t iy = y0; iy < y1 && !std::isnan(best); ++iy) {
            for (int64_t ix = x0; ix < x1; ++ix) {
              const float v = xp[iy * pl.w + ix];
              if (v > best || std::isnan(v)) {
                best = v;
                best_index = iy * pl.w + ix;
                if (std::isnan(v)) break;
              }
            }
          }
          o[(c * pl.oh + oy) * pl.ow + ox] = best;
          idx[(c * pl.oh + oy) * pl.ow + ox] = best_index;
        }
      }
    }
  });
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::max_pool2d.default", (max_pool_op<2, false>));
EMBER_REGISTER_KERNEL("aten::max_pool2d_with_indices.default", (max_pool_op<2, true>));
EMBER_REGISTER_KERNEL("aten::max_pool1d.default", (max_pool_op<1, false>));
EMBER_REGISTER_KERNEL("aten::max_pool1d_with_indices.default", (max_pool_op<1, true>));
EMBER_REGISTER_KERNEL("aten::avg_pool2d.default", avg_pool2d);
EMBER_REGISTER_KERNEL("aten::avg_pool1d.default", avg_pool1d);
EMBER_REGISTER_KERNEL("aten::adaptive_avg_pool2d.default", adaptive_avg_pool2d);
EMBER_REGISTER_KERNEL("aten::_adaptive_avg_pool2d.default", adaptive_avg_pool2d);
EMBER_REGISTER_KERNEL("aten::adaptive_max_pool2d.default", adaptive_max_pool2d);

}  // namespace portable
}  // namespace ember
