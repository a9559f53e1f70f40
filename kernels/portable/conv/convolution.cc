// Convolution (1-D and 2-D, grouped, dilated, transposed), float32, NC[H]W layout:
// aten::convolution.default, conv1d/conv2d (.default and string-padding .padding),
// conv_transpose1d/conv_transpose2d (.input).
//
// Paths: regular convolutions are one GEMM per (batch, group): weights [OCg, ICg*KH*KW] times
// the im2col matrix [ICg*KH*KW, OH*OW], which the GEMM packs straight from the input (1x1
// stride-1 unpadded convolutions use the input as the matrix). Depthwise-style convolutions
// (one input channel per group) use direct loops over output planes, and transposed
// convolutions scatter each input row into its output plane; both are parallel over planes.
#include <cstring>

#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/nn/op_helpers.h"
#include "kernels/portable/util/kernel_args.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

struct ConvParams {
  int spatial = 2;            // 1 or 2 (1-D runs as 2-D with height 1)
  int64_t stride[2] = {1, 1};
  int64_t pad[2] = {0, 0};    // padding before (top, left)
  int64_t pad_end[2] = {0, 0};  // padding after (bottom, right); equals pad except for 'same'
  int64_t dilation[2] = {1, 1};
  int64_t output_padding[2] = {0, 0};
  bool transposed = false;
  int64_t groups = 1;
};

struct ConvGeometry {
  int64_t batch, c_in, h, w, c_out, oh, ow, kh, kw;
  int64_t ic_per_group, oc_per_group;
};

// ---- im2col packing for the GEMM's B operand ----

struct Im2col {
  const float* x;  // first input channel of the group, one batch
  int64_t h, w, kh, kw, sh, sw, ph, pw, dh, dw, ow;
};

void pack_im2col(const void* state, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float* dst) {
  const Im2col& s = *static_cast<const Im2col*>(state);
  int64_t iy0[kGemmNr], ix0[kGemmNr];
  int64_t oy = j0 / s.ow, ox = j0 % s.ow;
  const bool one_row = ox + nr <= s.ow;  // all columns share an output row
  for (int64_t j = 0; j < nr; ++j) {
    iy0[j] = oy * s.sh - s.ph;
    ix0[j] = ox * s.sw - s.pw;
    if (++ox == s.ow) {
      ox = 0;
      ++oy;
    }
  }
  const int64_t khw = s.kh * s.kw;
  int64_t ic = p0 / khw, rem = p0 % khw;
  int64_t ky = rem / s.kw, kx = rem % s.kw;
  for (int64_t p = 0; p < kc; ++p) {
    float* d = dst + p * kGemmNr;
    const float* plane = s.x + ic * s.h * s.w;
    const int64_t dy = ky * s.dh, dx = kx * s.dw;
    if (one_row && s.sw == 1) {
      const int64_t iy = iy0[0] + dy;
      const int64_t ix_first = ix0[0] + dx;
      if (iy < 0 || iy >= s.h) {
        for (int64_t j = 0; j < nr; ++j) d[j] = 0.0f;
      } else if (ix_first >= 0 && ix_first + nr <= s.w) {
        std::memcpy(d, plane + iy * s.w + ix_first, sizeof(float) * nr);
      } else {
        const float* row = plane + iy * s.w;
        for (int64_t j = 0; j < nr; ++j) {
          const int64_t ix = ix_first + j;
          d[j] = (ix >= 0 && ix < s.w) ? row[ix] : 0.0f;
        }
      }
    } else {
      for (int64_t j = 0; j < nr; ++j) {
        const int64_t iy = iy0[j] + dy, ix = ix0[j] + dx;
        d[j] = (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w) ? plane[iy * s.w + ix] : 0.0f;
      }
    }
    for (int64_t j = nr; j < kGemmNr; ++j) d[j] = 0.0f;
    if (++kx == s.kw) {
      kx = 0;
      if (++ky == s.kh) {
        ky = 0;
        ++ic;
      }
    }
  }
}

// ---- regular convolution through the GEMM ----

void conv_gemm(KernelContext& ctx, const ConvGeometry& g, const ConvParams& p, const float* x,
               const float* w, const float* bias, float* out) {
  const int64_t k = g.ic_per_group * g.kh * g.kw;
  const int64_t plane_out = g.oh * g.ow;
  const bool direct_matrix = g.kh == 1 && g.kw == 1 && p.stride[0] == 1 && p.stride[1] == 1 &&
                             p.pad[0] == 0 && p.pad[1] == 0 && g.oh == g.h && g.ow == g.w;
  GemmWorkspace ws = reserve_gemm_workspace(ctx, g.oc_per_group, plane_out, k);
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t grp = 0; grp < p.groups; ++grp) {
      const float* xg = x + (b * g.c_in + grp * g.ic_per_group) * g.h * g.w;
      float* og = out + (b * g.c_out + grp * g.oc_per_group) * plane_out;
      float beta = 0.0f;
      if (bias != nullptr) {
        for (int64_t oc = 0; oc < g.oc_per_group; ++oc) {
          const float v = bias[grp * g.oc_per_group + oc];
          fill(plane_out, v, og + oc * plane_out);
        }
        beta = 1.0f;
      }
      Im2col im{xg, g.h, g.w, g.kh, g.kw, p.stride[0], p.stride[1], p.pad[0], p.pad[1],
                p.dilation[0], p.dilation[1], g.ow};
      GemmProblem pr;
      pr.m = g.oc_per_group;
      pr.n = plane_out;
      pr.k = k;
      pr.a = GemmMatrix{w + grp * g.oc_per_group * k, k, 1};
      if (direct_matrix) {
        pr.b = GemmMatrix{xg, plane_out, 1};
      } else {
        pr.pack_b = pack_im2col;
        pr.pack_b_state = &im;
      }
      pr.c = og;
      pr.ldc = plane_out;
      pr.beta = beta;
      gemm(&ctx, ws, pr);
    }
  }
}

// ---- one input channel per group (depthwise and channel multipliers) ----

// First and one-past-last output index o with 0 <= o*stride + offset < size.
inline void valid_range(int64_t offset, int64_t stride, int64_t size, int64_t count, int64_t* lo,
                        int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : ceil_div(-offset, stride);
  int64_t h = size - offset <= 0 ? 0 : ceil_div(size - offset, stride);
  if (h > count) h = count;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

void conv_depthwise(KernelContext& ctx, const ConvGeometry& g, const ConvParams& p, const float* x,
                    const float* w, const float* bias, float* out) {
  const int64_t planes = g.batch * g.c_out;
  parallel_for_range(ctx, planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / g.c_out, oc = plane % g.c_out;
      const int64_t ic = oc / g.oc_per_group;  // the group's single input channel
      const float* xp = x + (b * g.c_in + ic) * g.h * g.w;
      const float* wp = w + oc * g.kh * g.kw;
      float* op = out + plane * g.oh * g.ow;
      const float init = bias != nullptr ? bias[oc] : 0.0f;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        float* orow = op + oy * g.ow;
        fill(g.ow, init, orow);
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t iy = oy * p.stride[0] - p.pad[0] + ky * p.dilation[0];
          if (iy < 0 || iy >= g.h) continue;
          const float* irow = xp + iy * g.w;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            const float wv = wp[ky * g.kw + kx];
            const int64_t off = kx * p.dilation[1] - p.pad[1];
            int64_t lo, hi;
            valid_range(off, p.stride[1], g.w, g.ow, &lo, &hi);
            if (p.stride[1] == 1) {
              if (hi > lo) axpy(hi - lo, wv, irow + lo + off, orow + lo);
            } else {
              const int64_t s = p.stride[1];
              for (int64_t ox = lo; ox < hi; ++ox) orow[ox] += wv * irow[ox * s + off];
            }
          }
        }
      }
    }
  });
}

// ---- transposed convolution: scatter each input row into the output plane ----

void conv_transposed(KernelContext& ctx, const ConvGeometry& g, const ConvParams& p, const float* x,
                     const float* w, const float* bias, float* out) {
  // Weight layout [C_in, OC/groups, KH, KW].
  const int64_t planes = g.batch * g.c_out;
  parallel_for_range(ctx, planes, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / g.c_out, oc = plane % g.c_out;
      const int64_t grp = oc / g.oc_per_group, ocg = oc % g.oc_per_group;
      float* op = out + plane * g.oh * g.ow;
      const float init = bias != nullptr ? bias[oc] : 0.0f;
      fill(g.oh * g.ow, init, op);
      for (int64_t icg = 0; icg < g.ic_per_group; ++icg) {
        const int64_t ic = grp * g.ic_per_group + icg;
        const float* xp = x + (b * g.c_in + ic) * g.h * g.w;
        const float* wp = w + (ic * g.oc_per_group + ocg) * g.kh * g.kw;
        for (int64_t iy = 0; iy < g.h; ++iy) {
          const float* irow = xp + iy * g.w;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            const int64_t oy = iy * p.stride[0] - p.pad[0] + ky * p.dilation[0];
            if (oy < 0 || oy >= g.oh) continue;
            float* orow = op + oy * g.ow;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const float wv = wp[ky * g.kw + kx];
              const int64_t off = kx * p.dilation[1] - p.pad[1];  // ox = ix*sw + off
              int64_t lo, hi;
              valid_range(off, p.stride[1], g.ow, g.w, &lo, &hi);
              if (p.stride[1] == 1) {
                if (hi > lo) axpy(hi - lo, wv, irow + lo, orow + lo + off);
              } else {
                const int64_t s = p.stride[1];
                for (int64_t ix = lo; ix < hi; ++ix) orow[ix * s + off] += wv * irow[ix];
              }
            }
          }
        }
      }
    }
  });
}

// ---- argument handling shared by every overload ----

bool read_list(KernelArgs& a, size_t index, int spatial, int64_t fallback, int64_t* dst) {
  Span<const int64_t> l = a.int_list(index);
  if (!a.ok()) return false;
  if (l.size() > 1 && static_cast<int>(l.size()) != spatial) {
    return a.fail("stride/padding/dilation list length does not match the spatial rank");
  }
  for (int i = 0; i < spatial; ++i) dst[i] = list_at(l, static_cast<size_t>(i), fallback);
  return true;
}

// Reads stride/padding/dilation (and output padding) for `spatial` dims into p, laid out as
// 2-D (1-D: height 1, kernel height 1).
bool read_spatial(KernelArgs& a, int spatial, size_t stride_i, size_t pad_i, size_t dil_i,
                  size_t out_pad_i, ConvParams& p) {
  int64_t s[2], pd[2], d[2], op[2] = {0, 0};
  if (!read_list(a, stride_i, spatial, 1, s) || !read_list(a, pad_i, spatial, 0, pd) ||
      !read_list(a, dil_i, spatial, 1, d)) {
    return false;
  }
  if (out_pad_i != 0 && !read_list(a, out_pad_i, spatial, 0, op)) return false;
  const int first = 2 - spatial;  // 1-D fills the width slot
  for (int i = 0; i < spatial; ++i) {
    p.stride[first + i] = s[i];
    p.pad[first + i] = pd[i];
    p.pad_end[first + i] = pd[i];
    p.dilation[first + i] = d[i];
    p.output_padding[first + i] = op[i];
  }
  return true;
}

Error run_conv(KernelContext& ctx, KernelArgs& a, Tensor* input, Tensor* weight, Tensor* bias,
               const ConvParams& p, Tensor* out) {
  if (!require_float(a, input) || !require_float(a, weight) || !require_float(a, out)) return a.error();
  if (bias != nullptr && !require_float(a, bias)) return a.error();
  const int spatial = p.spatial;
  if (weight->rank != spatial + 2) return ctx.fail(Error::InvalidArgument, "weight rank does not match the convolution");
  const bool unbatched = input->rank == spatial + 1;
  if (!unbatched && input->rank != spatial + 2) {
    return ctx.fail(Error::InvalidArgument, "input rank does not match the convolution");
  }
  if (p.groups < 1) return ctx.fail(Error::InvalidArgument, "groups must be positive");
  for (int i = 0; i < 2; ++i) {
    if (p.stride[i] < 1 || p.dilation[i] < 1 || p.pad[i] < 0 || p.pad_end[i] < 0 || p.output_padding[i] < 0) {
      return ctx.fail(Error::InvalidArgument, "invalid stride, padding or dilation");
    }
  }
  const int lead = unbatched ? 0 : 1;
  ConvGeometry g;
  g.batch = unbatched ? 1 : input->sizes[0];
  g.c_in = input->sizes[lead];
  g.h = spatial == 2 ? input->sizes[lead + 1] : 1;
  g.w = input->sizes[input->rank - 1];
  g.kh = spatial == 2 ? weight->sizes[2] : 1;
  g.kw = weight->sizes[weight->rank - 1];
  if (g.c_in % p.groups != 0) return ctx.fail(Error::InvalidArgument, "input channels not divisible by groups");
  g.ic_per_group = g.c_in / p.groups;
  if (p.transposed) {
    if (weight->sizes[0] != g.c_in) return ctx.fail(Error::InvalidArgument, "weight does not match input channels");
    g.oc_per_group = weight->sizes[1];
    g.c_out = g.oc_per_group * p.groups;
    g.oh = (g.h - 1) * p.stride[0] - p.pad[0] - p.pad_end[0] + p.dilation[0] * (g.kh - 1) + p.output_padding[0] + 1;
    g.ow = (g.w - 1) * p.stride[1] - p.pad[1] - p.pad_end[1] + p.dilation[1] * (g.kw - 1) + p.output_padding[1] + 1;
  } else {
    g.c_out = weight->sizes[0];
    if (weight->sizes[1] != g.ic_per_group) return ctx.fail(Error::InvalidArgument, "weight does not match input channels / groups");
    if (g.c_out % p.groups != 0) return ctx.fail(Error::InvalidArgument, "output channels not divisible by groups");
    g.oc_per_group = g.c_out / p.groups;
    const int64_t eh = p.dilation[0] * (g.kh - 1) + 1, ew = p.dilation[1] * (g.kw - 1) + 1;
    const int64_t hp = g.h + p.pad[0] + p.pad_end[0], wp = g.w + p.pad[1] + p.pad_end[1];
    if (hp < eh || wp < ew) return ctx.fail(Error::InvalidArgument, "kernel larger than the padded input");
    g.oh = (hp - eh) / p.stride[0] + 1;
    g.ow = (wp - ew) / p.stride[1] + 1;
  }
  if (g.oh < 0 || g.ow < 0) return ctx.fail(Error::InvalidArgument, "negative output size");
  if (bias != nullptr && bias->numel() != g.c_out) return ctx.fail(Error::InvalidArgument, "bias size differs from output channels");
  int64_t sizes[4];
  int r = 0;
  if (!unbatched) sizes[r++] = g.batch;
  sizes[r++] = g.c_out;
  if (spatial == 2) sizes[r++] = g.oh;
  sizes[r++] = g.ow;
  if (!resize_out(a, out, sizes, r)) return a.error();
  if (out->numel() == 0) return Error::Ok;
  const float* x = input->data_as<float>();
  const float* w = weight->data_as<float>();
  const float* bd = bias != nullptr ? bias->data_as<float>() : nullptr;
  float* o = out->data_as<float>();
  if (p.transposed) {
    conv_transposed(ctx, g, p, x, w, bd, o);
  } else if (g.ic_per_group == 1 && g.kh * g.kw > 1) {
    conv_depthwise(ctx, g, p, x, w, bd, o);
  } else {
    conv_gemm(ctx, g, p, x, w, bd, o);
  }
  return Error::Ok;
}

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
Error convolution(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(10)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(9);
  if (!a.ok()) return a.error();
  ConvParams p;
  p.spatial = weight->rank - 2;
  if (p.spatial != 1 && p.spatial != 2) return ctx.fail(Error::NotSupported, "only 1-D and 2-D convolution are supported");
  if (!read_spatial(a, p.spatial, 3, 4, 5, 7, p)) return a.error();
  p.transposed = a.bool_value(6);
  p.groups = a.int_value(8);
  if (!a.ok()) return a.error();
  return run_conv(ctx, a, input, weight, bias, p, out);
}

// conv1d/conv2d(input, weight, bias?, stride, padding, dilation, groups)
template <int kSpatial>
Error conv_nd(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(7);
  ConvParams p;
  p.spatial = kSpatial;
  if (!read_spatial(a, kSpatial, 3, 4, 5, 0, p)) return a.error();
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  return run_conv(ctx, a, input, weight, bias, p, out);
}

// conv1d/conv2d.padding(input, weight, bias?, stride, str padding, dilation, groups)
template <int kSpatial>
Error conv_nd_string_padding(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(7);
  if (!a.ok()) return a.error();
  const EValue& mode = a.at(4);
  if (mode.tag != ValueTag::String) return ctx.fail(Error::InvalidArgument, "padding must be 'same' or 'valid'");
  const bool same = mode.as_string.size == 4 && std::memcmp(mode.as_string.data, "same", 4) == 0;
  const bool valid = mode.as_string.size == 5 && std::memcmp(mode.as_string.data, "valid", 5) == 0;
  if (!same && !valid) return ctx.fail(Error::InvalidArgument, "padding must be 'same' or 'valid'");
  ConvParams p;
  p.spatial = kSpatial;
  int64_t s[2], d[2];
  if (!read_list(a, 3, kSpatial, 1, s) || !read_list(a, 5, kSpatial, 1, d)) return a.error();
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  if (weight->rank != kSpatial + 2) return ctx.fail(Error::InvalidArgument, "weight rank does not match the convolution");
  const int first = 2 - kSpatial;
  for (int i = 0; i < kSpatial; ++i) {
    p.stride[first + i] = s[i];
    p.dilation[first + i] = d[i];
    if (same) {
      if (s[i] != 1) return ctx.fail(Error::InvalidArgument, "padding='same' needs stride 1");
      const int64_t total = d[i] * (weight->sizes[2 + i] - 1);
      p.pad[first + i] = total / 2;
      p.pad_end[first + i] = total - total / 2;
    }
  }
  return run_conv(ctx, a, input, weight, bias, p, out);
}

// conv_transpose1d/2d.input(input, weight, bias?, stride, padding, output_padding, groups, dilation)
template <int kSpatial>
Error conv_transpose_nd(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(8);
  ConvParams p;
  p.spatial = kSpatial;
  p.transposed = true;
  if (!read_spatial(a, kSpatial, 3, 4, 7, 5, p)) return a.error();
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  return run_conv(ctx, a, input, weight, bias, p, out);
}

}  // namespace

EMBER_REGISTER_KERNEL("aten::convolution.default", convolution);
EMBER_REGISTER_KERNEL("aten::conv1d.default", conv_nd<1>);
EMBER_REGISTER_KERNEL("aten::conv2d.default", conv_nd<2>);
EMBER_REGISTER_KERNEL("aten::conv1d.padding", conv_nd_string_padding<1>);
EMBER_REGISTER_KERNEL("aten::conv2d.padding", conv_nd_string_padding<2>);
EMBER_REGISTER_KERNEL("aten::conv_transpose1d.input", conv_transpose_nd<1>);
EMBER_REGISTER_KERNEL("aten::conv_transpose2d.input", conv_transpose_nd<2>);

}  // namespace portable
}  // namespace ember
