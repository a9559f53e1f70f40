// Convolution (1-D, 2-D and 3-D, grouped, dilated, transposed), float32, NC[D][H]W layout:
// aten::convolution.default, conv1d/conv2d/conv3d (.default and string-padding .padding),
// conv_transpose1d (.default), conv_transpose2d/conv_transpose3d (.input).
//
// Paths: regular convolutions are one GEMM per (batch, group): weights [OCg, ICg*KH*KW] times
// the im2col matrix [ICg*KH*KW, OH*OW], which the GEMM packs straight from the input (1x1
// stride-1 unpadded convolutions use the input as the matrix). Depthwise-style convolutions
// (one input channel per group) use direct loops over output planes, and transposed
// convolutions scatter each input row into its output plane; both are parallel over planes.
// 3-D convolutions use the same GEMM with a volumetric im2col packer (any groups), and a
// scatter loop for the transposed case.
#include <cstring>

#include "kernels/portable/conv/window_params.h"
#include "kernels/portable/linalg/gemm.h"
#include "kernels/portable/linalg/vector_ops.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/parallel.h"
#include "kernels/portable/util/tensor_util.h"
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

// ---- 3-D convolution (regular through the GEMM with a volumetric im2col; transposed by
// scattering each input row) ----

struct Conv3dParams {
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t pad_end[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t output_padding[3] = {0, 0, 0};
  bool transposed = false;
  int64_t groups = 1;
};

struct Im2col3d {
  const float* x;                     // first input channel of the group, one batch
  int64_t in[3], k[3], s[3], p[3], d[3], out[3];
};

void pack_im2col3d(const void* state, int64_t p0, int64_t kc, int64_t j0, int64_t nr, float* dst) {
  const Im2col3d& s = *static_cast<const Im2col3d*>(state);
  int64_t base[3][kGemmNr];
  int64_t oz = j0 / (s.out[1] * s.out[2]), rem = j0 % (s.out[1] * s.out[2]);
  int64_t oy = rem / s.out[2], ox = rem % s.out[2];
  for (int64_t j = 0; j < nr; ++j) {
    base[0][j] = oz * s.s[0] - s.p[0];
    base[1][j] = oy * s.s[1] - s.p[1];
    base[2][j] = ox * s.s[2] - s.p[2];
    if (++ox == s.out[2]) {
      ox = 0;
      if (++oy == s.out[1]) {
        oy = 0;
        ++oz;
      }
    }
  }
  const int64_t kvol = s.k[0] * s.k[1] * s.k[2];
  const int64_t in_vol = s.in[0] * s.in[1] * s.in[2];
  for (int64_t p = p0; p < p0 + kc; ++p) {
    float* d = dst + (p - p0) * kGemmNr;
    const int64_t ic = p / kvol, r = p % kvol;
    const int64_t kz = r / (s.k[1] * s.k[2]), ky = (r / s.k[2]) % s.k[1], kx = r % s.k[2];
    const float* vol = s.x + ic * in_vol;
    for (int64_t j = 0; j < nr; ++j) {
      const int64_t iz = base[0][j] + kz * s.d[0], iy = base[1][j] + ky * s.d[1], ix = base[2][j] + kx * s.d[2];
      d[j] = (iz >= 0 && iz < s.in[0] && iy >= 0 && iy < s.in[1] && ix >= 0 && ix < s.in[2])
                 ? vol[(iz * s.in[1] + iy) * s.in[2] + ix]
                 : 0.0f;
    }
    for (int64_t j = nr; j < kGemmNr; ++j) d[j] = 0.0f;
  }
}

Error run_conv3d(KernelContext& ctx, KernelArgs& a, Tensor* input, Tensor* weight, Tensor* bias,
                 const Conv3dParams& p, Tensor* out) {
  if (!require_float(a, input) || !require_float(a, weight) || !require_float(a, out)) return a.error();
  if (bias != nullptr && !require_float(a, bias)) return a.error();
  if (weight->rank != 5) return ctx.fail(Error::InvalidArgument, "weight rank does not match the convolution");
  const bool unbatched = input->rank == 4;
  if (!unbatched && input->rank != 5) return ctx.fail(Error::InvalidArgument, "input rank does not match the convolution");
  if (p.groups < 1) return ctx.fail(Error::InvalidArgument, "groups must be positive");
  for (int i = 0; i < 3; ++i) {
    if (const char* why = window_param_error(p.stride[i], p.dilation[i], p.pad[i], p.pad_end[i], p.output_padding[i])) {
      return ctx.fail(Error::InvalidArgument, why);
    }
  }
  const int lead = unbatched ? 0 : 1;
  const int64_t batch = unbatched ? 1 : input->sizes[0];
  const int64_t c_in = input->sizes[lead];
  int64_t in[3], k[3], o[3];
  for (int i = 0; i < 3; ++i) {
    in[i] = input->sizes[lead + 1 + i];
    k[i] = weight->sizes[2 + i];
  }
  if (c_in % p.groups != 0) return ctx.fail(Error::InvalidArgument, "input channels not divisible by groups");
  const int64_t icg = c_in / p.groups;
  int64_t c_out, ocg;
  if (p.transposed) {
    if (weight->sizes[0] != c_in) return ctx.fail(Error::InvalidArgument, "weight does not match input channels");
    ocg = weight->sizes[1];
    c_out = ocg * p.groups;
    for (int i = 0; i < 3; ++i) {
      o[i] = (in[i] - 1) * p.stride[i] - p.pad[i] - p.pad_end[i] + p.dilation[i] * (k[i] - 1) + p.output_padding[i] + 1;
    }
  } else {
    c_out = weight->sizes[0];
    if (weight->sizes[1] != icg) return ctx.fail(Error::InvalidArgument, "weight does not match input channels / groups");
    if (c_out % p.groups != 0) return ctx.fail(Error::InvalidArgument, "output channels not divisible by groups");
    ocg = c_out / p.groups;
    for (int i = 0; i < 3; ++i) {
      const int64_t e = p.dilation[i] * (k[i] - 1) + 1, padded = in[i] + p.pad[i] + p.pad_end[i];
      if (padded < e) return ctx.fail(Error::InvalidArgument, "kernel larger than the padded input");
      o[i] = (padded - e) / p.stride[i] + 1;
    }
  }
  for (int i = 0; i < 3; ++i) {
    if (o[i] < 0) return ctx.fail(Error::InvalidArgument, "negative output size");
  }
  if (bias != nullptr && bias->numel() != c_out) return ctx.fail(Error::InvalidArgument, "bias size differs from output channels");
  int64_t sizes[5];
  int r = 0;
  if (!unbatched) sizes[r++] = batch;
  sizes[r++] = c_out;
  for (int i = 0; i < 3; ++i) sizes[r++] = o[i];
  if (!resize_out(a, out, sizes, r)) return a.error();
  if (out->numel() == 0) return Error::Ok;
  const float* x = input->data_as<float>();
  const float* w = weight->data_as<float>();
  const float* bd = bias != nullptr ? bias->data_as<float>() : nullptr;
  float* op = out->data_as<float>();
  const int64_t in_vol = in[0] * in[1] * in[2], out_vol = o[0] * o[1] * o[2], kvol = k[0] * k[1] * k[2];
  if (!p.transposed) {
    const int64_t kk = icg * kvol;
    GemmWorkspace ws = reserve_gemm_workspace(ctx, ocg, out_vol, kk);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t grp = 0; grp < p.groups; ++grp) {
        const float* xg = x + (b * c_in + grp * icg) * in_vol;
        float* og = op + (b * c_out + grp * ocg) * out_vol;
        float beta = 0.0f;
        if (bd != nullptr) {
          for (int64_t oc = 0; oc < ocg; ++oc) fill(out_vol, bd[grp * ocg + oc], og + oc * out_vol);
          beta = 1.0f;
        }
        Im2col3d im;
        im.x = xg;
        for (int i = 0; i < 3; ++i) {
          im.in[i] = in[i];
          im.k[i] = k[i];
          im.s[i] = p.stride[i];
          im.p[i] = p.pad[i];
          im.d[i] = p.dilation[i];
          im.out[i] = o[i];
        }
        GemmProblem pr;
        pr.m = ocg;
        pr.n = out_vol;
        pr.k = kk;
        pr.a = GemmMatrix{w + grp * ocg * kk, kk, 1};
        pr.pack_b = pack_im2col3d;
        pr.pack_b_state = &im;
        pr.c = og;
        pr.ldc = out_vol;
        pr.beta = beta;
        gemm(&ctx, ws, pr);
      }
    }
    return Error::Ok;
  }
  // Transposed: weight [C_in, OC/groups, KD, KH, KW]; out[oz, oy, ox] += x[iz, iy, ix] * w
  // with o = i * stride - pad + k * dilation. Parallel over output volumes.
  parallel_for_range(ctx, batch * c_out, 1, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t b = plane / c_out, oc = plane % c_out;
      const int64_t grp = oc / ocg, oci = oc % ocg;
      float* ov = op + plane * out_vol;
      fill(out_vol, bd != nullptr ? bd[oc] : 0.0f, ov);
      for (int64_t ici = 0; ici < icg; ++ici) {
        const int64_t ic = grp * icg + ici;
        const float* xv = x + (b * c_in + ic) * in_vol;
        const float* wv = w + (ic * ocg + oci) * kvol;
        for (int64_t iz = 0; iz < in[0]; ++iz) {
          for (int64_t kz = 0; kz < k[0]; ++kz) {
            const int64_t oz = iz * p.stride[0] - p.pad[0] + kz * p.dilation[0];
            if (oz < 0 || oz >= o[0]) continue;
            for (int64_t iy = 0; iy < in[1]; ++iy) {
              const float* irow = xv + (iz * in[1] + iy) * in[2];
              for (int64_t ky = 0; ky < k[1]; ++ky) {
                const int64_t oy = iy * p.stride[1] - p.pad[1] + ky * p.dilation[1];
                if (oy < 0 || oy >= o[1]) continue;
                float* orow = ov + (oz * o[1] + oy) * o[2];
                for (int64_t kx = 0; kx < k[2]; ++kx) {
                  const float wval = wv[(kz * k[1] + ky) * k[2] + kx];
                  const int64_t off = kx * p.dilation[2] - p.pad[2];
                  int64_t lo, hi;
                  valid_range(off, p.stride[2], o[2], in[2], &lo, &hi);
                  for (int64_t ix = lo; ix < hi; ++ix) orow[ix * p.stride[2] + off] += wval * irow[ix];
                }
              }
            }
          }
        }
      }
    }
  });
  return Error::Ok;
}

bool read_list3(KernelArgs& a, size_t index, int64_t fallback, int64_t* dst) {
  Span<const int64_t> l = a.int_list(index);
  if (!a.ok()) return false;
  if (l.size() > 1 && l.size() != 3) return a.fail("stride/padding/dilation list length does not match the spatial rank");
  for (int i = 0; i < 3; ++i) dst[i] = list_at(l, static_cast<size_t>(i), fallback);
  return true;
}

// conv3d(input, weight, bias?, stride, padding, dilation, groups)
Error conv3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(7);
  Conv3dParams p;
  if (!read_list3(a, 3, 1, p.stride) || !read_list3(a, 4, 0, p.pad) || !read_list3(a, 5, 1, p.dilation)) return a.error();
  for (int i = 0; i < 3; ++i) p.pad_end[i] = p.pad[i];
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  return run_conv3d(ctx, a, input, weight, bias, p, out);
}

// conv3d.padding(input, weight, bias?, stride, str padding, dilation, groups)
Error conv3d_string_padding(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(7);
  if (!a.ok()) return a.error();
  const bool same = a.string_is(4, "same");
  if (!same && !a.string_is(4, "valid")) return ctx.fail(Error::InvalidArgument, "padding must be 'same' or 'valid'");
  Conv3dParams p;
  if (!read_list3(a, 3, 1, p.stride) || !read_list3(a, 5, 1, p.dilation)) return a.error();
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  if (weight->rank != 5) return ctx.fail(Error::InvalidArgument, "weight rank does not match the convolution");
  if (same) {
    for (int i = 0; i < 3; ++i) {
      if (p.stride[i] != 1) return ctx.fail(Error::InvalidArgument, "padding='same' needs stride 1");
      const int64_t total = p.dilation[i] * (weight->sizes[2 + i] - 1);
      p.pad[i] = total / 2;
      p.pad_end[i] = total - total / 2;
    }
  }
  return run_conv3d(ctx, a, input, weight, bias, p, out);
}

// conv_transpose3d.input(input, weight, bias?, stride, padding, output_padding, groups, dilation)
Error conv_transpose3d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  Tensor* input = a.tensor(0);
  Tensor* weight = a.tensor(1);
  Tensor* bias = a.optional_tensor(2);
  Tensor* out = a.tensor(8);
  Conv3dParams p;
  p.transposed = true;
  if (!read_list3(a, 3, 1, p.stride) || !read_list3(a, 4, 0, p.pad) || !read_list3(a, 5, 0, p.output_padding) ||
      !read_list3(a, 7, 1, p.dilation)) {
    return a.error();
  }
  for (int i = 0; i < 3; ++i) p.pad_end[i] = p.pad[i];
  p.groups = a.int_value(6);
  if (!a.ok()) return a.error();
  return run_conv3d(ctx, a, input, weight, bias, p, out);
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
    if (const char* why = window_param_error(p.stride[i], p.dilation[i], p.pad[i], p.pad_end[i], p.output_padding[i])) {
      return ctx.fail(Error::InvalidArgument, why);
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
  if (weight->rank == 5) {
    Conv3dParams p3;
    if (!read_list3(a, 3, 1, p3.stride) || !read_list3(a, 4, 0, p3.pad) || !read_list3(a, 5, 1, p3.dilation) ||
        !read_list3(a, 7, 0, p3.output_padding)) {
      return a.error();
    }
    for (int i = 0; i < 3; ++i) p3.pad_end[i] = p3.pad[i];
    p3.transposed = a.bool_value(6);
    p3.groups = a.int_value(8);
    if (!a.ok()) return a.error();
    return run_conv3d(ctx, a, input, weight, bias, p3, out);
  }
  ConvParams p;
  p.spatial = weight->rank - 2;
  if (p.spatial != 1 && p.spatial != 2) return ctx.fail(Error::NotSupported, "only 1-D, 2-D and 3-D convolution are supported");
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
// ATen: conv_transpose1d has no overload name; conv_transpose2d/3d are `.input`.
EMBER_REGISTER_KERNEL("aten::conv_transpose1d.default", conv_transpose_nd<1>);
EMBER_REGISTER_KERNEL("aten::conv_transpose2d.input", conv_transpose_nd<2>);
EMBER_REGISTER_KERNEL("aten::conv3d.default", conv3d);
EMBER_REGISTER_KERNEL("aten::conv3d.padding", conv3d_string_padding);
EMBER_REGISTER_KERNEL("aten::conv_transpose3d.input", conv_transpose3d);

}  // namespace portable
}  // namespace ember
