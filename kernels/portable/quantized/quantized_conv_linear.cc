// Ember's quantized convolution and fully connected operators (namespace ember_quantized), the
// form `ember export` lowers PT2E's dequantize -> conv2d/linear -> [relu] -> quantize chains
// to (exporter/passes/lower_quantized.cc; docs/pte-format.md "Quantized operators"):
//
//   ember_quantized::conv2d(Tensor input, float input_scale, int input_zero_point,
//       Tensor weight, Tensor weight_scales, Tensor? bias, int[2] stride, int[2] padding,
//       int[2] dilation, int groups, float output_scale, int output_zero_point,
//       int output_min, int output_max) -> Tensor
//   ember_quantized::linear(Tensor input, float input_scale, int input_zero_point,
//       Tensor weight, Tensor weight_scales, Tensor? bias, float output_scale,
//       int output_zero_point, int output_min, int output_max) -> Tensor
//
// input and output: int8 or uint8 (the same dtype), per-tensor scale and zero point, NCHW /
// [..., K]. weight: int8, symmetric per output channel ([O, I/groups, kh, kw] / [O, K]) with
// float32 weight_scales [O]; bias float32 [O] or None. Arithmetic: the exact int32 sum
// acc = sum((x - input_zero_point) * w) over the taps inside the image (padding is the
// input's zero point, i.e. real 0), then y = acc * (input_scale * weight_scales[o]) + bias[o]
// in float and q = clamp(round_half_even(y * float(1 / output_scale)) + output_zero_point,
// output_min, output_max): PyTorch's float reference (dequantize, conv, quantize) up to the
// float rounding of its own sum. A fused activation narrows [output_min, output_max] (relu:
// output_min = zero point; relu6 / hardtanh / clamp: the quantized bounds).
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include "kernels/portable/conv/window_params.h"
#include "kernels/portable/quantized/int_dot.h"
#include "kernels/portable/quantized/quant_math.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Per-tensor quantization of the input and output, and the weights' per-channel scales.
struct QuantParams {
  float input_scale = 1;
  int32_t input_zero_point = 0;
  const float* weight_scales = nullptr;  // [O]
  const float* bias = nullptr;           // [O] or null
  float inv_output_scale = 1;
  float output_zero_point = 0;
  float output_min = 0, output_max = 0;
};

// Validates and reads the parameters shared by both operators; `first` is the index of
// input_scale, `out_first` of output_scale. Weight scales/bias lengths are checked against O.
bool read_params(KernelArgs& a, const Tensor* in, const Tensor* w, const Tensor* scales, const Tensor* bias,
                 const Tensor* out, size_t out_first, QuantParams* p) {
  if (!a.ok()) return false;
  int64_t lo = 0, hi = 0;
  const bool eight_bit = in->dtype == ScalarType::Int8 || in->dtype == ScalarType::UInt8;
  if (!eight_bit || !quantized_range(in->dtype, &lo, &hi) || out->dtype != in->dtype) {
    return a.fail("quantized input and output must both be int8 or both uint8");
  }
  if (w->dtype != ScalarType::Int8) return a.fail("quantized weights must be int8");
  const int64_t channels = w->sizes[0];
  if (scales->dtype != ScalarType::Float32 || scales->rank != 1 || scales->sizes[0] != channels) {
    return a.fail("weight_scales must be float32 [output channels]");
  }
  if (bias != nullptr && (bias->dtype != ScalarType::Float32 || bias->rank != 1 || bias->sizes[0] != channels)) {
    return a.fail("bias must be float32 [output channels]");
  }
  if (!require_contiguous(a, in) || !require_contiguous(a, w) || !require_contiguous(a, scales) ||
      !require_contiguous(a, bias)) {
    return false;
  }
  const double in_scale = a.scalar(1);
  const int64_t in_zp = a.int_value(2);
  const double out_scale = a.scalar(out_first);
  const int64_t out_zp = a.int_value(out_first + 1);
  const int64_t out_min = a.int_value(out_first + 2), out_max = a.int_value(out_first + 3);
  if (!a.ok()) return false;
  if (!(std::isfinite(in_scale) && in_scale > 0) || !(std::isfinite(out_scale) && out_scale > 0)) {
    return a.fail("input_scale and output_scale must be positive and finite");
  }
  if (in_zp < lo || in_zp > hi || out_zp < lo || out_zp > hi) return a.fail("a zero point is outside the dtype's range");
  if (out_min > out_max || out_min < lo || out_max > hi) return a.fail("[output_min, output_max] must lie in the dtype's range");
  const float* s = scales->data_as<float>();
  for (int64_t c = 0; c < channels; ++c) {
    if (!(std::isfinite(s[c]) && s[c] > 0)) return a.fail("every weight scale must be positive and finite");
  }
  p->input_scale = static_cast<float>(in_scale);
  p->input_zero_point = static_cast<int32_t>(in_zp);
  p->weight_scales = s;
  p->bias = bias != nullptr ? bias->data_as<float>() : nullptr;
  p->inv_output_scale = static_cast<float>(1.0 / out_scale);
  p->output_zero_point = static_cast<float>(out_zp);
  p->output_min = static_cast<float>(out_min);
  p->output_max = static_cast<float>(out_max);
  return true;
}

// Requantizes one integer sum of output channel `o` (a NaN from a NaN or infinite bias
// becomes the zero point: quant_math.h).
template <typename Q>
inline Q requantize(int64_t acc, int64_t o, const QuantParams& p) {
  float y = static_cast<float>(acc) * (p.input_scale * p.weight_scales[o]);
  if (p.bias != nullptr) y += p.bias[o];
  return quantize_scaled<Q>(y * p.inv_output_scale, p.output_zero_point, p.output_min, p.output_max);
}

struct ConvGeometry {
  int64_t batch, c_in, h, w, c_out, kh, kw, oh, ow, groups;
  int64_t stride[2], padding[2], dilation[2];
};

// Direct convolution over a block of up to 4 output channels and one output row segment at
// a time (used for depthwise filters and filters over kColumnElems taps): each input row is
// converted once to int16 (x - zero point, |.| <= 255), and every weight tap adds int16
// products (|.| <= 255 * 128 < 2^15) into int64 sums for the block's channels over the tap's
// valid output columns (computed once per tap). Sums and the converted row live on the
// stack: no scratch memory.
constexpr int64_t kSegment = 256, kChannelBlock = 4, kMaxRow = 2048;

template <typename Q>
void conv_loop(KernelContext& ctx, const ConvGeometry& g, const Q* x, const int8_t* wt, Q* y, const QuantParams& p) {
  const int64_t cin_g = g.c_in / g.groups, cout_g = g.c_out / g.groups;
  const int64_t blocks = (cout_g + kChannelBlock - 1) / kChannelBlock;
  const bool row_fits = g.w <= kMaxRow;
  parallel_for_range(ctx, g.batch * g.groups * blocks, 1, [&](int64_t begin, int64_t end) {
    int64_t acc[kChannelBlock][kSegment];  // taps are unbounded here: int32 could overflow
    int16_t row[kMaxRow];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (g.groups * blocks), group = (task / blocks) % g.groups, blk = task % blocks;
      const int64_t o0 = group * cout_g + blk * kChannelBlock;
      const int64_t nb = cout_g - blk * kChannelBlock < kChannelBlock ? cout_g - blk * kChannelBlock : kChannelBlock;
      for (int64_t oy = 0; oy < g.oh; ++oy) {
        for (int64_t ox0 = 0; ox0 < g.ow; ox0 += kSegment) {
          const int64_t n = g.ow - ox0 < kSegment ? g.ow - ox0 : kSegment;
          for (int64_t j = 0; j < nb; ++j) {
            for (int64_t i = 0; i < n; ++i) acc[j][i] = 0;
          }
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const Q* xc = x + ((b * g.c_in) + group * cin_g + ci) * g.h * g.w;
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.stride[0] - g.padding[0] + ky * g.dilation[0];
              if (iy < 0 || iy >= g.h) continue;  // padding: the zero point, contributes 0
              const Q* xrow = xc + iy * g.w;
              if (row_fits) {
                for (int64_t i = 0; i < g.w; ++i) row[i] = static_cast<int16_t>(static_cast<int32_t>(xrow[i]) - p.input_zero_point);
              }
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                // Output columns whose input column ix = ox * stride + shift lies in [0, W).
                const int64_t shift = kx * g.dilation[1] - g.padding[1];
                int64_t lo = shift >= 0 ? 0 : (-shift + g.stride[1] - 1) / g.stride[1];
                int64_t hi = (g.w - 1 - shift) >= 0 ? (g.w - 1 - shift) / g.stride[1] + 1 : 0;
                lo = lo > ox0 ? lo - ox0 : 0;
                hi = hi - ox0 < n ? hi - ox0 : n;
                if (lo >= hi) continue;
                for (int64_t j = 0; j < nb; ++j) {
                  const int8_t* wj = wt + (((o0 + j) * cin_g + ci) * g.kh + ky) * g.kw + kx;
                  const int16_t w = *wj;
                  if (w == 0) continue;
                  int64_t* a = acc[j];
                  if (row_fits && g.stride[1] == 1) {
                    const int16_t* xs = row + ox0 + shift;
                    for (int64_t i = lo; i < hi; ++i) a[i] += static_cast<int16_t>(xs[i] * w);
                  } else if (row_fits) {
                    for (int64_t i = lo; i < hi; ++i) a[i] += static_cast<int16_t>(row[(ox0 + i) * g.stride[1] + shift] * w);
                  } else {
                    for (int64_t i = lo; i < hi; ++i) {
                      a[i] += (static_cast<int32_t>(xrow[(ox0 + i) * g.stride[1] + shift]) - p.input_zero_point) * w;
                    }
                  }
                }
              }
            }
          }
          for (int64_t j = 0; j < nb; ++j) {
            Q* yo = y + ((b * g.c_out) + o0 + j) * g.oh * g.ow + oy * g.ow + ox0;
            for (int64_t i = 0; i < n; ++i) yo[i] = requantize<Q>(acc[j][i], o0 + j, p);
          }
        }
      }
    }
  });
}

// Convolution as small int16 GEMMs, for filters of at most kColumnElems taps
// (cin/groups * kh * kw): for a segment of one output row, the input patches are gathered
// once into columns (x - zero point, 0 for padding) and every output channel's int8 weights
// are dotted with them (int_dot.h: pmaddwd / vmlal). The columns live on the stack.
constexpr int64_t kColumnElems = 8192;

template <typename Q>
void conv_loop_columns(KernelContext& ctx, const ConvGeometry& g, const Q* x, const int8_t* wt, Q* y,
                       const QuantParams& p) {
  const int64_t cin_g = g.c_in / g.groups, cout_g = g.c_out / g.groups;
  const int64_t taps = cin_g * g.kh * g.kw;
  const int64_t segment = kColumnElems / taps < g.ow ? kColumnElems / taps : g.ow;
  parallel_for_range(ctx, g.batch * g.groups * g.oh, 1, [&](int64_t begin, int64_t end) {
    int16_t col[kColumnElems];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t b = task / (g.groups * g.oh), group = (task / g.oh) % g.groups, oy = task % g.oh;
      for (int64_t ox0 = 0; ox0 < g.ow; ox0 += segment) {
        const int64_t n = g.ow - ox0 < segment ? g.ow - ox0 : segment;
        for (int64_t i = 0; i < n; ++i) {
          int16_t* c = col + i * taps;
          const int64_t ox = ox0 + i;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const Q* xc = x + ((b * g.c_in) + group * cin_g + ci) * g.h * g.w;
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.stride[0] - g.padding[0] + ky * g.dilation[0];
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.stride[1] - g.padding[1] + kx * g.dilation[1];
                const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
                *c++ = inside ? static_cast<int16_t>(static_cast<int32_t>(xc[iy * g.w + ix]) - p.input_zero_point) : 0;
              }
            }
          }
        }
        for (int64_t oc = 0; oc < cout_g; ++oc) {
          const int64_t o = group * cout_g + oc;
          const int8_t* w = wt + o * taps;
          Q* yo = y + ((b * g.c_out) + o) * g.oh * g.ow + oy * g.ow + ox0;
          for (int64_t i = 0; i < n; ++i) yo[i] = requantize<Q>(dot_int16_int8(col + i * taps, w, taps), o, p);
        }
      }
    }
  });
}

int64_t pair_at(Span<const int64_t> v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// conv2d(input, input_scale, input_zero_point, weight, weight_scales, bias, stride, padding,
//        dilation, groups, output_scale, output_zero_point, output_min, output_max, out)
Error quantized_conv2d(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(15)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* w = a.tensor(3);
  const Tensor* scales = a.tensor(4);
  const Tensor* bias = a.optional_tensor(5);
  Span<const int64_t> stride = a.int_list(6), padding = a.int_list(7), dilation = a.int_list(8);
  const int64_t groups = a.int_value(9);
  Tensor* out = a.out(14);
  if (!a.ok()) return a.error();
  if (in->rank != 4 || w->rank != 4) return ctx.fail(Error::InvalidArgument, "quantized conv2d needs a 4-D input and weight");
  for (Span<const int64_t> v : {stride, padding, dilation}) {
    if (v.size() != 1 && v.size() != 2) return ctx.fail(Error::InvalidArgument, "stride, padding and dilation need 1 or 2 values");
  }
  ConvGeometry g{};
  g.batch = in->sizes[0];
  g.c_in = in->sizes[1];
  g.h = in->sizes[2];
  g.w = in->sizes[3];
  g.c_out = w->sizes[0];
  g.kh = w->sizes[2];
  g.kw = w->sizes[3];
  g.groups = groups;
  for (size_t i = 0; i < 2; ++i) {
    g.stride[i] = pair_at(stride, i);
    g.padding[i] = pair_at(padding, i);
    g.dilation[i] = pair_at(dilation, i);
    if (const char* why = window_param_error(g.stride[i], g.dilation[i], g.padding[i], g.padding[i], 0)) {
      return ctx.fail(Error::InvalidArgument, why);
    }
  }
  if (groups < 1 || g.c_in % groups != 0 || g.c_out % groups != 0 || w->sizes[1] != g.c_in / groups) {
    return ctx.fail(Error::InvalidArgument, "groups must divide the channels, and the weight must be [O, C/groups, kh, kw]");
  }
  g.oh = (g.h + 2 * g.padding[0] - g.dilation[0] * (g.kh - 1) - 1) / g.stride[0] + 1;
  g.ow = (g.w + 2 * g.padding[1] - g.dilation[1] * (g.kw - 1) - 1) / g.stride[1] + 1;
  if (g.oh < 1 || g.ow < 1) return ctx.fail(Error::InvalidArgument, "the kernel is larger than the padded input");
  QuantParams p;
  if (!read_params(a, in, w, scales, bias, out, 10, &p)) return a.error();
  const int64_t sizes[4] = {g.batch, g.c_out, g.oh, g.ow};
  if (!resize_out(a, out, sizes, 4) || !require_contiguous(a, out)) return a.error();
  // Depthwise filters (one input channel per group) are too short for dot products.
  const bool columns = g.c_in / g.groups > 1 && (g.c_in / g.groups) * g.kh * g.kw <= kColumnElems;
  if (in->dtype == ScalarType::Int8) {
    if (columns) conv_loop_columns(ctx, g, in->data_as<int8_t>(), w->data_as<int8_t>(), out->data_as<int8_t>(), p);
    else conv_loop(ctx, g, in->data_as<int8_t>(), w->data_as<int8_t>(), out->data_as<int8_t>(), p);
  } else {
    if (columns) conv_loop_columns(ctx, g, in->data_as<uint8_t>(), w->data_as<int8_t>(), out->data_as<uint8_t>(), p);
    else conv_loop(ctx, g, in->data_as<uint8_t>(), w->data_as<int8_t>(), out->data_as<uint8_t>(), p);
  }
  return Error::Ok;
}

// Each input row is converted once to int16 (x - zero point) on the stack and dotted with
// every weight row (int_dot.h); rows longer than kColumnElems use a scalar loop.
template <typename Q>
void linear_loop(KernelContext& ctx, int64_t rows, int64_t k, int64_t n, const Q* x, const int8_t* wt, Q* y,
                 const QuantParams& p) {
  parallel_for_range(ctx, rows, 1, [&](int64_t begin, int64_t end) {
    int16_t row[kColumnElems];
    for (int64_t r = begin; r < end; ++r) {
      const Q* xr = x + r * k;
      if (k <= kColumnElems) {
        for (int64_t j = 0; j < k; ++j) row[j] = static_cast<int16_t>(static_cast<int32_t>(xr[j]) - p.input_zero_point);
      }
      for (int64_t o = 0; o < n; ++o) {
        const int8_t* wr = wt + o * k;
        int64_t acc = 0;
        if (k <= kColumnElems) {
          acc = dot_int16_int8(row, wr, k);
        } else {
          for (int64_t j = 0; j < k; ++j) acc += (static_cast<int32_t>(xr[j]) - p.input_zero_point) * static_cast<int32_t>(wr[j]);
        }
        y[r * n + o] = requantize<Q>(acc, o, p);
      }
    }
  });
}

// linear(input, input_scale, input_zero_point, weight, weight_scales, bias, output_scale,
//        output_zero_point, output_min, output_max, out)
Error quantized_linear(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(11)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* w = a.tensor(3);
  const Tensor* scales = a.tensor(4);
  const Tensor* bias = a.optional_tensor(5);
  Tensor* out = a.out(10);
  if (!a.ok()) return a.error();
  if (in->rank < 1 || w->rank != 2 || in->sizes[in->rank - 1] != w->sizes[1]) {
    return ctx.fail(Error::InvalidArgument, "quantized linear needs input [..., K] and weight [N, K]");
  }
  QuantParams p;
  if (!read_params(a, in, w, scales, bias, out, 6, &p)) return a.error();
  Shape s(*in);
  s.d[s.rank - 1] = w->sizes[0];
  if (!resize_to(a, out, s)) return a.error();
  const int64_t k = w->sizes[1], cols = w->sizes[0], rows = k > 0 ? in->numel() / k : 0;
  if (in->dtype == ScalarType::Int8) {
    linear_loop(ctx, rows, k, cols, in->data_as<int8_t>(), w->data_as<int8_t>(), out->data_as<int8_t>(), p);
  } else {
    linear_loop(ctx, rows, k, cols, in->data_as<uint8_t>(), w->data_as<int8_t>(), out->data_as<uint8_t>(), p);
  }
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("ember_quantized::conv2d.default", quantized_conv2d);
EMBER_REGISTER_KERNEL("ember_quantized::linear.default", quantized_linear);

}  // namespace portable
}  // namespace ember
