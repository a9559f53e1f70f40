// Volumetric pooling and the pooling companions, float32, [N, C, ...] / [C, ...] layouts:
//   max_pool3d (+ _with_indices), avg_pool3d, adaptive_avg_pool3d (+ _adaptive_avg_pool3d),
//   adaptive_max_pool3d, fractional_max_pool2d / 3d (random_samples is an input: the window
//   starts are the deterministic function of it that PyTorch uses), max_unpool2d / 3d,
//   max_pool2d_with_indices_backward, im2col and col2im.
// Output sizes, ceil_mode, padding, NaN propagation, divisors and index encodings (flat index
// within one input plane / volume) follow PyTorch. Parallel over planes where outputs are
// disjoint.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/portable/pool/pool_window.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

using Window3 = PoolWindow<3>;

struct Vol {
  int64_t planes = 1;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
};

// Reads the plane count and the trailing `spatial` input dims (input rank spatial+1|+2).
bool read_vol(KernelArgs& a, const Tensor* in, int spatial, Vol& v) {
  if (!require_float(a, in)) return false;
  if (in->rank != spatial + 1 && in->rank != spatial + 2) return a.fail("input has the wrong rank");
  const int lead = in->rank - spatial;
  v.planes = 1;
  for (int d = 0; d < lead; ++d) v.planes *= in->sizes[d];
  for (int i = 0; i < spatial; ++i) v.in[3 - spatial + i] = in->sizes[lead + i];
  return true;
}

// Resizes out (and indices) to the input's leading dims + the trailing output dims of v.
bool resize_pooled(KernelArgs& a, const Tensor* in, int spatial, const Vol& v, Tensor* out, Tensor* indices) {
  if (!require_float(a, out)) return false;
  int64_t sizes[kMaxRank];
  const int lead = in->rank - spatial;
  for (int d = 0; d < lead; ++d) sizes[d] = in->sizes[d];
  for (int i = 0; i < spatial; ++i) sizes[lead + i] = v.out[3 - spatial + i];
  if (!resize_out(a, out, sizes, in->rank)) return false;
  if (indices != nullptr) {
    if (indices->dtype != ScalarType::Int64) return a.fail("indices must be int64");
    if (!resize_out(a, indices, sizes, in->rank)) return false;
  }
  return true;
}

// ---- max_pool3d / avg_pool3d ----

void max_pool3(KernelContext& ctx, const Vol& v, const Window3& w, const float* x, float* out, int64_t* idx) {
  parallel_for_range(ctx, v.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * v.in_size();
      float* op = out + p * v.out_size();
      int64_t* ip = idx != nullptr ? idx + p * v.out_size() : nullptr;
      int64_t o = 0;
      for (int64_t od = 0; od < v.out[0]; ++od) {
        int64_t d0 = od * w.stride[0] - w.pad[0];
        while (d0 < 0) d0 += w.dilation[0];
        const int64_t d1 = std::min<int64_t>(od * w.stride[0] - w.pad[0] + (w.kernel[0] - 1) * w.dilation[0] + 1, v.in[0]);
        for (int64_t oh = 0; oh < v.out[1]; ++oh) {
          int64_t h0 = oh * w.stride[1] - w.pad[1];
          while (h0 < 0) h0 += w.dilation[1];
          const int64_t h1 = std::min<int64_t>(oh * w.stride[1] - w.pad[1] + (w.kernel[1] - 1) * w.dilation[1] + 1, v.in[1]);
          for (int64_t ow = 0; ow < v.out[2]; ++ow, ++o) {
            int64_t w0 = ow * w.stride[2] - w.pad[2];
            while (w0 < 0) w0 += w.dilation[2];
            const int64_t w1 = std::min<int64_t>(ow * w.stride[2] - w.pad[2] + (w.kernel[2] - 1) * w.dilation[2] + 1, v.in[2]);
            int64_t best_i = (d0 * v.in[1] + h0) * v.in[2] + w0;
            float best = -std::numeric_limits<float>::infinity();
            for (int64_t id = d0; id < d1; id += w.dilation[0]) {
              for (int64_t ih = h0; ih < h1; ih += w.dilation[1]) {
                for (int64_t iw = w0; iw < w1; iw += w.dilation[2]) {
                  const int64_t i = (id * v.in[1] + ih) * v.in[2] + iw;
                  const float val = xp[i];
                  if (val > best || std::isnan(val)) {
                    best = val;
                    best_i = i;
                  }
                }
              }
            }
            op[o] = best;
            if (ip != nullptr) ip[o] = best_i;
          }
        }
      }
    }
  });
}

// max_pool3d(self, kernel_size, stride, padding, dilation, ceil_mode) -> out [, indices]
template <bool kWithIndices>
Error max_pool3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(kWithIndices ? 8 : 7)) return a.error();
  Tensor* in = a.tensor(0);
  Window3 w;
  if (!read_pool_window(a, 3, 1, 2, 3, 4, w)) return a.error();
  w.ceil_mode = a.bool_value(5);
  Tensor* out = a.tensor(6);
  Tensor* indices = kWithIndices ? a.tensor(7) : nullptr;
  Vol v;
  if (!read_vol(a, in, 3, v)) return a.error();
  for (int i = 0; i < 3; ++i) {
    v.out[i] = pooled_size(v.in[i], w.kernel[i], w.pad[i], w.stride[i], w.dilation[i], w.ceil_mode);
    if (v.out[i] < 1) return ctx.fail(Error::InvalidArgument, "pooling output would be empty");
  }
  if (!resize_pooled(a, in, 3, v, out, indices)) return a.error();
  max_pool3(ctx, v, w, in->data_as<float>(), out->data_as<float>(),
            indices != nullptr ? indices->data_as<int64_t>() : nullptr);
  return Error::Ok;
}

// avg_pool3d(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?)
Error avg_pool3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* in = a.tensor(0);
  Window3 w;
  if (!read_pool_window(a, 3, 1, 2, 3, 0, w)) return a.error();
  w.ceil_mode = a.bool_value(4);
  const bool include_pad = a.bool_value(5);
  const int64_t divisor = a.optional_int(6, 0);
  Tensor* out = a.tensor(7);
  if (!a.ok()) return a.error();
  if (divisor < 0 || (!a.is_none(6) && divisor == 0)) return ctx.fail(Error::InvalidArgument, "divisor must be non-zero");
  Vol v;
  if (!read_vol(a, in, 3, v)) return a.error();
  for (int i = 0; i < 3; ++i) {
    v.out[i] = pooled_size(v.in[i], w.kernel[i], w.pad[i], w.stride[i], 1, w.ceil_mode);
    if (v.out[i] < 1) return ctx.fail(Error::InvalidArgument, "pooling output would be empty");
  }
  if (!resize_pooled(a, in, 3, v, out, nullptr)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  parallel_for_range(ctx, v.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * v.in_size();
      float* op = o + p * v.out_size();
      int64_t oi = 0;
      for (int64_t od = 0; od < v.out[0]; ++od) {
        for (int64_t oh = 0; oh < v.out[1]; ++oh) {
          for (int64_t ow = 0; ow < v.out[2]; ++ow, ++oi) {
            const int64_t oc[3] = {od, oh, ow};
            int64_t lo[3], hi[3];
            int64_t pool_size = 1, count = 1;
            for (int i = 0; i < 3; ++i) {
              lo[i] = oc[i] * w.stride[i] - w.pad[i];
              hi[i] = std::min<int64_t>(lo[i] + w.kernel[i], v.in[i] + w.pad[i]);
              pool_size *= hi[i] - lo[i];
              lo[i] = std::max<int64_t>(lo[i], 0);
              hi[i] = std::min<int64_t>(hi[i], v.in[i]);
              count *= hi[i] > lo[i] ? hi[i] - lo[i] : 0;
            }
            if (count == 0) {
              op[oi] = 0.0f;
              continue;
            }
            float sum = 0.0f;
            for (int64_t id = lo[0]; id < hi[0]; ++id)
              for (int64_t ih = lo[1]; ih < hi[1]; ++ih)
                for (int64_t iw = lo[2]; iw < hi[2]; ++iw) sum += xp[(id * v.in[1] + ih) * v.in[2] + iw];
            const int64_t div = divisor != 0 ? divisor : include_pad ? pool_size : count;
            op[oi] = sum / static_cast<float>(div);
          }
        }
      }
    }
  });
  return Error::Ok;
}

// ---- adaptive 3-D ----

inline int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ceil_div((o + 1) * in, out); }

bool prepare_adaptive3(KernelArgs& a, const Tensor* in, Span<const int64_t> size, Tensor* out, Tensor* indices, Vol& v) {
  if (!read_vol(a, in, 3, v)) return false;
  if (size.size() != 3 && size.size() != 1) return a.fail("output_size must have 3 entries");
  for (int i = 0; i < 3; ++i) {
    v.out[i] = list_at(size, i, 1);
    if (v.out[i] < 0) return a.fail("output_size must be non-negative");
  }
  if (v.in_size() == 0 && v.out_size() > 0) return a.fail("input volume is empty");
  return resize_pooled(a, in, 3, v, out, indices);
}

// adaptive_avg_pool3d(self, output_size) -> out
Error adaptive_avg_pool3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(3)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.tensor(2);
  Vol v;
  if (!a.ok() || !prepare_adaptive3(a, in, size, out, nullptr, v)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  parallel_for_range(ctx, v.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * v.in_size();
      float* op = o + p * v.out_size();
      int64_t oi = 0;
      for (int64_t od = 0; od < v.out[0]; ++od) {
        const int64_t d0 = adaptive_start(od, v.in[0], v.out[0]), d1 = adaptive_end(od, v.in[0], v.out[0]);
        for (int64_t oh = 0; oh < v.out[1]; ++oh) {
          const int64_t h0 = adaptive_start(oh, v.in[1], v.out[1]), h1 = adaptive_end(oh, v.in[1], v.out[1]);
          for (int64_t ow = 0; ow < v.out[2]; ++ow, ++oi) {
            const int64_t w0 = adaptive_start(ow, v.in[2], v.out[2]), w1 = adaptive_end(ow, v.in[2], v.out[2]);
            float sum = 0.0f;
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) sum += xp[(id * v.in[1] + ih) * v.in[2] + iw];
            op[oi] = sum / static_cast<float>((d1 - d0) * (h1 - h0) * (w1 - w0));
          }
        }
      }
    }
  });
  return Error::Ok;
}

// adaptive_max_pool3d(self, output_size) -> (out, indices)
Error adaptive_max_pool3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(4)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> size = a.int_list(1);
  Tensor* out = a.tensor(2);
  Tensor* indices = a.tensor(3);
  Vol v;
  if (!a.ok() || !prepare_adaptive3(a, in, size, out, indices, v)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  int64_t* idx = indices->data_as<int64_t>();
  parallel_for_range(ctx, v.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const float* xp = x + p * v.in_size();
      float* op = o + p * v.out_size();
      int64_t* ip = idx + p * v.out_size();
      int64_t oi = 0;
      for (int64_t od = 0; od < v.out[0]; ++od) {
        const int64_t d0 = adaptive_start(od, v.in[0], v.out[0]), d1 = adaptive_end(od, v.in[0], v.out[0]);
        for (int64_t oh = 0; oh < v.out[1]; ++oh) {
          const int64_t h0 = adaptive_start(oh, v.in[1], v.out[1]), h1 = adaptive_end(oh, v.in[1], v.out[1]);
          for (int64_t ow = 0; ow < v.out[2]; ++ow, ++oi) {
            const int64_t w0 = adaptive_start(ow, v.in[2], v.out[2]), w1 = adaptive_end(ow, v.in[2], v.out[2]);
            float best = -std::numeric_limits<float>::infinity();
            int64_t best_i = (d0 * v.in[1] + h0) * v.in[2] + w0;
            for (int64_t id = d0; id < d1; ++id)
              for (int64_t ih = h0; ih < h1; ++ih)
                for (int64_t iw = w0; iw < w1; ++iw) {
                  const int64_t i = (id * v.in[1] + ih) * v.in[2] + iw;
                  if (xp[i] > best || std::isnan(xp[i])) {
                    best = xp[i];
                    best_i = i;
                  }
                }
            op[oi] = best;
            ip[oi] = best_i;
          }
        }
      }
    }
  });
  return Error::Ok;
}

// ---- fractional max pooling ----

// Window starts along one dim for a sample u in [0, 1), as PyTorch generates them.
inline int64_t fractional_start(float u, int64_t i, int64_t in, int64_t out, int64_t k) {
  if (i == out - 1) return in - k;
  const float alpha = static_cast<float>(in - k) / static_cast<float>(out - 1);
  return static_cast<int64_t>(static_cast<int>((static_cast<float>(i) + u) * alpha) - static_cast<int>(u * alpha));
}

// fractional_max_pool{2,3}d(self, kernel_size, output_size, random_samples) -> (out, indices)
template <int kSpatial>
Error fractional_max_pool(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> ks = a.int_list(1);
  Span<const int64_t> os = a.int_list(2);
  Tensor* samples = a.tensor(3);
  Tensor* out = a.tensor(4);
  Tensor* indices = a.tensor(5);
  Vol v;
  if (!a.ok() || !read_vol(a, in, kSpatial, v) || !require_float(a, samples)) return a.error();
  int64_t k[3] = {1, 1, 1};
  const int first = 3 - kSpatial;
  for (int i = 0; i < kSpatial; ++i) {
    k[first + i] = list_at(ks, i, 1);
    v.out[first + i] = list_at(os, i, 1);
    if (k[first + i] < 1 || v.out[first + i] < 1) return ctx.fail(Error::InvalidArgument, "kernel and output sizes must be positive");
    if (v.out[first + i] + k[first + i] - 1 > v.in[first + i]) {
      return ctx.fail(Error::InvalidArgument, "output_size + kernel_size - 1 exceeds the input size");
    }
  }
  if (samples->numel() != v.planes * kSpatial) {
    return ctx.fail(Error::InvalidArgument, "random_samples must be [N, C, spatial dims]");
  }
  if (!resize_pooled(a, in, kSpatial, v, out, indices)) return a.error();
  const float* x = in->data_as<float>();
  const float* u = samples->data_as<float>();
  float* o = out->data_as<float>();
  int64_t* idx = indices->data_as<int64_t>();
  parallel_for_range(ctx, v.planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      // Samples per plane: 2-D (w, h); 3-D (t, h, w).
      float su[3] = {0, 0, 0};
      if (kSpatial == 2) {
        su[2] = u[p * 2];
        su[1] = u[p * 2 + 1];
      } else {
        su[0] = u[p * 3];
        su[1] = u[p * 3 + 1];
        su[2] = u[p * 3 + 2];
      }
      const float* xp = x + p * v.in_size();
      float* op = o + p * v.out_size();
      int64_t* ip = idx + p * v.out_size();
      int64_t oi = 0;
      for (int64_t od = 0; od < v.out[0]; ++od) {
        const int64_t d0 = kSpatial == 3 ? fractional_start(su[0], od, v.in[0], v.out[0], k[0]) : 0;
        for (int64_t oh = 0; oh < v.out[1]; ++oh) {
          const int64_t h0 = fractional_start(su[1], oh, v.in[1], v.out[1], k[1]);
          for (int64_t ow = 0; ow < v.out[2]; ++ow, ++oi) {
            const int64_t w0 = fractional_start(su[2], ow, v.in[2], v.out[2], k[2]);
            float best = -std::numeric_limits<float>::infinity();
            int64_t best_i = (d0 * v.in[1] + h0) * v.in[2] + w0;
            for (int64_t id = d0; id < d0 + k[0]; ++id)
              for (int64_t ih = h0; ih < h0 + k[1]; ++ih)
                for (int64_t iw = w0; iw < w0 + k[2]; ++iw) {
                  const int64_t i = (id * v.in[1] + ih) * v.in[2] + iw;
                  if (xp[i] > best || std::isnan(xp[i])) {
                    best = xp[i];
                    best_i = i;
                  }
                }
            op[oi] = best;
            ip[oi] = best_i;
          }
        }
      }
    }
  });
  return Error::Ok;
}

// ---- scatter by indices: max_unpool and max_pool2d_with_indices_backward ----

// out (planes x out_plane, zeroed) [+]= values at the flat per-plane indices.
bool scatter_planes(KernelContext& ctx, int64_t planes, int64_t in_plane, int64_t out_plane, const float* values,
                    const int64_t* indices, float* out, bool accumulate) {
  std::memset(out, 0, sizeof(float) * static_cast<size_t>(planes * out_plane));
  bool ok = true;
  (void)ctx;
  for (int64_t p = 0; p < planes; ++p) {
    const float* vp = values + p * in_plane;
    const int64_t* ip = indices + p * in_plane;
    float* op = out + p * out_plane;
    for (int64_t i = 0; i < in_plane; ++i) {
      const int64_t j = ip[i];
      if (j < 0 || j >= out_plane) {
        ok = false;
        continue;
      }
      if (accumulate) {
        op[j] += vp[i];
      } else {
        op[j] = vp[i];
      }
    }
  }
  return ok;
}

// max_unpool2d(self, indices, output_size) / max_unpool3d(self, indices, output_size, stride, padding)
template <int kSpatial>
Error max_unpool(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  const size_t out_i = kSpatial == 2 ? 3 : 5;
  if (!a.expect(out_i + 1)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* indices = a.tensor(1);
  Span<const int64_t> os = a.int_list(2);
  Tensor* out = a.tensor(out_i);
  Vol v;
  if (!a.ok() || !read_vol(a, in, kSpatial, v)) return a.error();
  if (indices->dtype != ScalarType::Int64 || indices->numel() != in->numel() || !indices->is_contiguous()) {
    return ctx.fail(Error::InvalidArgument, "indices must be int64 and shaped like the input");
  }
  if (os.size() != static_cast<size_t>(kSpatial)) return ctx.fail(Error::InvalidArgument, "output_size has the wrong length");
  for (int i = 0; i < kSpatial; ++i) v.out[3 - kSpatial + i] = os[i];
  if (!resize_pooled(a, in, kSpatial, v, out, nullptr)) return a.error();
  if (!scatter_planes(ctx, v.planes, v.in_size(), v.out_size(), in->data_as<float>(), indices->data_as<int64_t>(),
                      out->data_as<float>(), false)) {
    return ctx.fail(Error::InvalidArgument, "max_unpool: an index is out of the output's range");
  }
  return Error::Ok;
}

// max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding, dilation,
//                                  ceil_mode, indices) -> grad_input (shaped like self)
Error max_pool2d_with_indices_backward(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  Tensor* grad = a.tensor(0);
  Tensor* self = a.tensor(1);
  Tensor* indices = a.tensor(7);
  Tensor* out = a.tensor(8);
  if (!a.ok() || !require_float(a, grad) || !require_float(a, self) || !require_float(a, out)) return a.error();
  if (self->rank != 3 && self->rank != 4) return ctx.fail(Error::InvalidArgument, "input must be 3-D or 4-D");
  if (indices->dtype != ScalarType::Int64 || indices->numel() != grad->numel() || grad->rank != self->rank) {
    return ctx.fail(Error::InvalidArgument, "indices must be int64 and shaped like grad_output");
  }
  if (!resize_out(a, out, self->sizes, self->rank)) return a.error();
  const int r = self->rank;
  const int64_t planes = self->numel() / (self->sizes[r - 2] * self->sizes[r - 1] == 0 ? 1 : self->sizes[r - 2] * self->sizes[r - 1]);
  const int64_t in_plane = grad->sizes[r - 2] * grad->sizes[r - 1];
  const int64_t out_plane = self->sizes[r - 2] * self->sizes[r - 1];
  if (out->numel() == 0) return Error::Ok;
  if (!scatter_planes(ctx, planes, in_plane, out_plane, grad->data_as<float>(), indices->data_as<int64_t>(),
                      out->data_as<float>(), true)) {
    return ctx.fail(Error::InvalidArgument, "max_pool2d backward: an index is out of range");
  }
  return Error::Ok;
}

// ---- im2col / col2im ----

struct Patch {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

bool read_patch(KernelArgs& a, size_t k_i, size_t d_i, size_t p_i, size_t s_i, Patch& p) {
  Span<const int64_t> k = a.int_list(k_i), d = a.int_list(d_i), pd = a.int_list(p_i), s = a.int_list(s_i);
  if (!a.ok()) return false;
  p.kh = list_at(k, 0, 1);
  p.kw = list_at(k, 1, 1);
  p.dh = list_at(d, 0, 1);
  p.dw = list_at(d, 1, 1);
  p.ph = list_at(pd, 0, 0);
  p.pw = list_at(pd, 1, 0);
  p.sh = list_at(s, 0, 1);
  p.sw = list_at(s, 1, 1);
  if (p.kh < 1 || p.kw < 1 || p.dh < 1 || p.dw < 1 || p.sh < 1 || p.sw < 1 || p.ph < 0 || p.pw < 0) {
    return a.fail("kernel, dilation and stride must be positive, padding non-negative");
  }
  return true;
}

inline int64_t patch_count(int64_t in, int64_t k, int64_t d, int64_t p, int64_t s) {
  const int64_t span = in + 2 * p - (d * (k - 1) + 1);
  return span < 0 ? 0 : span / s + 1;
}

// im2col(self, kernel_size, dilation, padding, stride) -> [N, C*kh*kw, L]
Error im2col(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(6)) return a.error();
  Tensor* in = a.tensor(0);
  Tensor* out = a.tensor(5);
  Patch p;
  if (!a.ok() || !read_patch(a, 1, 2, 3, 4, p) || !require_float(a, in) || !require_float(a, out)) return a.error();
  if (in->rank != 3 && in->rank != 4) return ctx.fail(Error::InvalidArgument, "im2col expects a 3-D or 4-D input");
  const bool batched = in->rank == 4;
  const int64_t batch = batched ? in->sizes[0] : 1;
  const int64_t c = in->sizes[in->rank - 3], h = in->sizes[in->rank - 2], w = in->sizes[in->rank - 1];
  const int64_t oh = patch_count(h, p.kh, p.dh, p.ph, p.sh), ow = patch_count(w, p.kw, p.dw, p.pw, p.sw);
  if (oh < 1 || ow < 1) return ctx.fail(Error::InvalidArgument, "im2col: no complete patch fits the input");
  int64_t sizes[3];
  int r = 0;
  if (batched) sizes[r++] = batch;
  sizes[r++] = c * p.kh * p.kw;
  sizes[r++] = oh * ow;
  if (!resize_out(a, out, sizes, r)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  const int64_t rows = batch * c * p.kh * p.kw;
  parallel_for_range(ctx, rows, 4, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t kj = row % p.kw, ki = (row / p.kw) % p.kh, plane = row / (p.kw * p.kh);
      const float* xp = x + plane * h * w;
      float* orow = o + row * oh * ow;
      for (int64_t y = 0; y < oh; ++y) {
        const int64_t iy = y * p.sh - p.ph + ki * p.dh;
        for (int64_t xx = 0; xx < ow; ++xx) {
          const int64_t ix = xx * p.sw - p.pw + kj * p.dw;
          orow[y * ow + xx] = (iy >= 0 && iy < h && ix >= 0 && ix < w) ? xp[iy * w + ix] : 0.0f;
        }
      }
    }
  });
  return Error::Ok;
}

// col2im(self, output_size, kernel_size, dilation, padding, stride) -> [N, C, H, W]
Error col2im(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  Tensor* in = a.tensor(0);
  Span<const int64_t> os = a.int_list(1);
  Tensor* out = a.tensor(6);
  Patch p;
  if (!a.ok() || !read_patch(a, 2, 3, 4, 5, p) || !require_float(a, in) || !require_float(a, out)) return a.error();
  if (in->rank != 2 && in->rank != 3) return ctx.fail(Error::InvalidArgument, "col2im expects a 2-D or 3-D input");
  if (os.size() != 2) return ctx.fail(Error::InvalidArgument, "output_size must have 2 entries");
  const bool batched = in->rank == 3;
  const int64_t batch = batched ? in->sizes[0] : 1;
  const int64_t ckk = in->sizes[in->rank - 2], l = in->sizes[in->rank - 1];
  if (ckk % (p.kh * p.kw) != 0) return ctx.fail(Error::InvalidArgument, "col2im: dim -2 is not divisible by the kernel size");
  const int64_t c = ckk / (p.kh * p.kw), h = os[0], w = os[1];
  const int64_t oh = patch_count(h, p.kh, p.dh, p.ph, p.sh), ow = patch_count(w, p.kw, p.dw, p.pw, p.sw);
  if (oh * ow != l) return ctx.fail(Error::InvalidArgument, "col2im: block count does not match output_size");
  int64_t sizes[4];
  int r = 0;
  if (batched) sizes[r++] = batch;
  sizes[r++] = c;
  sizes[r++] = h;
  sizes[r++] = w;
  if (!resize_out(a, out, sizes, r)) return a.error();
  const float* x = in->data_as<float>();
  float* o = out->data_as<float>();
  parallel_for_range(ctx, batch * c, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      float* op = o + plane * h * w;
      std::memset(op, 0, sizeof(float) * static_cast<size_t>(h * w));
      for (int64_t ki = 0; ki < p.kh; ++ki) {
        for (int64_t kj = 0; kj < p.kw; ++kj) {
          const float* row = x + ((plane * p.kh + ki) * p.kw + kj) * l;
          for (int64_t y = 0; y < oh; ++y) {
            const int64_t iy = y * p.sh - p.ph + ki * p.dh;
            if (iy < 0 || iy >= h) continue;
            for (int64_t xx = 0; xx < ow; ++xx) {
              const int64_t ix = xx * p.sw - p.pw + kj * p.dw;
              if (ix >= 0 && ix < w) op[iy * w + ix] += row[y * ow + xx];
            }
          }
        }
      }
    }
  });
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::max_pool3d.default", max_pool3d<false>);
EMBER_REGISTER_KERNEL("aten::max_pool3d_with_indices.default", max_pool3d<true>);
EMBER_REGISTER_KERNEL("aten::avg_pool3d.default", avg_pool3d);
EMBER_REGISTER_KERNEL("aten::adaptive_avg_pool3d.default", adaptive_avg_pool3d);
EMBER_REGISTER_KERNEL("aten::_adaptive_avg_pool3d.default", adaptive_avg_pool3d);
EMBER_REGISTER_KERNEL("aten::adaptive_max_pool3d.default", adaptive_max_pool3d);
EMBER_REGISTER_KERNEL("aten::fractional_max_pool2d.default", fractional_max_pool<2>);
EMBER_REGISTER_KERNEL("aten::fractional_max_pool3d.default", fractional_max_pool<3>);
EMBER_REGISTER_KERNEL("aten::max_unpool2d.default", max_unpool<2>);
EMBER_REGISTER_KERNEL("aten::max_unpool3d.default", max_unpool<3>);
EMBER_REGISTER_KERNEL("aten::max_pool2d_with_indices_backward.default", max_pool2d_with_indices_backward);
EMBER_REGISTER_KERNEL("aten::im2col.default", im2col);
EMBER_REGISTER_KERNEL("aten::col2im.default", col2im);

}  // namespace portable
}  // namespace ember
