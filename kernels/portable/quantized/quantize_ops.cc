// The quantize / dequantize operators of PyTorch's PT2E flow (namespace quantized_decomposed,
// what `convert_pt2e` leaves around float ops), with PyTorch's arithmetic:
//   quantize:   q = clamp(round_half_even(x * float(1 / scale)) + zero_point, quant_min, quant_max)
//   dequantize: x = (float(q) - zero_point) * float(scale)
// Per tensor (scale and zero point as numbers, or as one-element tensors for the .tensor
// overloads), per group of a row (dequantize_per_channel_group: int4 weights) and per channel (scales [C] float32/float64 and zero points [C] int32/int64 along
// `axis`). Quantized dtypes: uint8, int8, int16, int32; float side: float32.
//
// choose_qparams.tensor computes per-tensor parameters of an activation at run time (PT2E's
// dynamic quantization).
//
// Every quantization parameter is validated before use: a non-positive or non-finite scale,
// quant_min > quant_max, a range or zero point outside the dtype, a dtype argument that is not
// the output's (or input's) dtype, or a per-channel parameter whose length is not the size of
// `axis` fails with InvalidArgument and a message; NaN inputs quantize to the zero point
// (clamped to [quant_min, quant_max]) instead of an undefined float-to-int conversion.
#include <cmath>
#include <cstdint>

#include "kernels/portable/quantized/quant_math.h"
#include "kernels/portable/util/kernel_args.h"
#include "kernels/portable/util/tensor_util.h"
#include "runtime/kernel/kernel_registry.h"

namespace ember {
namespace portable {
namespace {

// Checks the (quant_min, quant_max, dtype) arguments against the quantized tensor `q`.
bool check_range(KernelArgs& a, const Tensor* q, int64_t qmin, int64_t qmax, int64_t dtype_arg) {
  if (!a.ok()) return false;
  int64_t lo = 0, hi = 0;
  if (!quantized_range(q->dtype, &lo, &hi)) {
    return a.fail("the quantized tensor must be uint8, int8, int16 or int32");
  }
  if (dtype_arg != static_cast<int64_t>(q->dtype)) {
    return a.fail("the dtype argument differs from the quantized tensor's dtype");
  }
  if (qmin > qmax) return a.fail("quant_min is greater than quant_max");
  if (qmin < lo || qmax > hi) return a.fail("[quant_min, quant_max] exceeds the range of the quantized dtype");
  return true;
}

bool valid_scale(double s) { return std::isfinite(s) && s > 0; }

// A zero point must be representable in the quantized dtype (PyTorch's observers keep it in
// [quant_min, quant_max]; anything outside the dtype is a corrupt parameter).
bool valid_zero_point(const Tensor* q, int64_t zp) {
  int64_t lo = 0, hi = 0;
  return quantized_range(q->dtype, &lo, &hi) && zp >= lo && zp <= hi;
}

// Reads element i of a float32/float64 tensor as double; of an int32/int64 tensor as int64.
double real_at(const Tensor* t, int64_t i) {
  return t->dtype == ScalarType::Float64 ? t->data_as<double>()[i] : t->data_as<float>()[i];
}
int64_t int_at(const Tensor* t, int64_t i) {
  return t->dtype == ScalarType::Int64 ? t->data_as<int64_t>()[i] : t->data_as<int32_t>()[i];
}
bool is_real_param(const Tensor* t) { return t->dtype == ScalarType::Float32 || t->dtype == ScalarType::Float64; }
bool is_int_param(const Tensor* t) { return t->dtype == ScalarType::Int64 || t->dtype == ScalarType::Int32; }

// Channel parameters for element i: per tensor when `channels` is 1.
struct ChannelParams {
  const Tensor* scales = nullptr;       // [C] or null (then `scale`)
  const Tensor* zero_points = nullptr;  // [C] or null (then `zero_point`)
  double scale = 1;
  int64_t zero_point = 0;
  int64_t channels = 1, inner = 1;      // element i has channel (i / inner) % channels
};

template <typename Q>
void quantize_loop(const float* x, Q* q, int64_t n, const ChannelParams& p, int64_t qmin, int64_t qmax,
                   bool reciprocal_in_float) {
  const float lo = static_cast<float>(qmin), hi = static_cast<float>(qmax);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = p.scales != nullptr ? (i / p.inner) % p.channels : 0;
    const double s = p.scales != nullptr ? real_at(p.scales, c) : p.scale;
    // PyTorch computes 1 / scale in the scale's own precision, then multiplies in float.
    const float inv = reciprocal_in_float ? 1.0f / static_cast<float>(s) : static_cast<float>(1.0 / s);
    const int64_t zp = p.zero_points != nullptr ? int_at(p.zero_points, c) : p.zero_point;
    q[i] = quantize_scaled<Q>(x[i] * inv, static_cast<float>(zp), lo, hi);
  }
}

template <typename Q>
void dequantize_loop(const Q* q, float* x, int64_t n, const ChannelParams& p) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = p.scales != nullptr ? (i / p.inner) % p.channels : 0;
    const float s = static_cast<float>(p.scales != nullptr ? real_at(p.scales, c) : p.scale);
    const int64_t zp = p.zero_points != nullptr ? int_at(p.zero_points, c) : p.zero_point;
    x[i] = (static_cast<float>(q[i]) - static_cast<float>(zp)) * s;
  }
}

void run_quantize(const Tensor* in, Tensor* out, const ChannelParams& p, int64_t qmin, int64_t qmax, bool inv_float) {
  const float* x = in->data_as<float>();
  const int64_t n = in->numel();
  switch (out->dtype) {
    case ScalarType::UInt8: quantize_loop(x, out->data_as<uint8_t>(), n, p, qmin, qmax, inv_float); break;
    case ScalarType::Int8: quantize_loop(x, out->data_as<int8_t>(), n, p, qmin, qmax, inv_float); break;
    case ScalarType::Int16: quantize_loop(x, out->data_as<int16_t>(), n, p, qmin, qmax, inv_float); break;
    default: quantize_loop(x, out->data_as<int32_t>(), n, p, qmin, qmax, inv_float); break;
  }
}

void run_dequantize(const Tensor* in, Tensor* out, const ChannelParams& p) {
  float* x = out->data_as<float>();
  const int64_t n = in->numel();
  switch (in->dtype) {
    case ScalarType::UInt8: dequantize_loop(in->data_as<uint8_t>(), x, n, p); break;
    case ScalarType::Int8: dequantize_loop(in->data_as<int8_t>(), x, n, p); break;
    case ScalarType::Int16: dequantize_loop(in->data_as<int16_t>(), x, n, p); break;
    default: dequantize_loop(in->data_as<int32_t>(), x, n, p); break;
  }
}

// Common checks of the float side and output shape.
bool prepare(KernelArgs& a, const Tensor* in, Tensor* out, const Tensor* float_side) {
  if (!a.ok()) return false;
  if (!require_contiguous(a, in) || !require_contiguous(a, out)) return false;
  if (float_side->dtype != ScalarType::Float32) {
    return a.fail("quantize/dequantize support float32 on the float side", Error::NotSupported);
  }
  return resize_like(a, out, *in);
}

// Scale and zero point of a per-tensor op: numbers (default overload) or one-element tensors.
bool per_tensor_params(KernelArgs& a, const Tensor* q, bool tensor_overload, ChannelParams* p) {
  if (tensor_overload) {
    const Tensor* s = a.tensor(1);
    const Tensor* z = a.tensor(2);
    if (!a.ok()) return false;
    if (s->numel() != 1 || z->numel() != 1) return a.fail("scale and zero_point must have one element each");
    if (!is_real_param(s) || !is_int_param(z)) {
      return a.fail("scale must be float32/float64 and zero_point int32/int64");
    }
    p->scale = real_at(s, 0);
    p->zero_point = int_at(z, 0);
  } else {
    p->scale = a.scalar(1);
    p->zero_point = a.int_value(2);
  }
  if (!a.ok()) return false;
  if (!valid_scale(p->scale)) return a.fail("scale must be positive and finite");
  if (!valid_zero_point(q, p->zero_point)) return a.fail("zero_point is outside the quantized dtype's range");
  return true;
}

// quantize_per_tensor[.tensor](input, scale, zero_point, quant_min, quant_max, dtype, out)
template <bool kTensorParams>
Error quantize_per_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(6);
  const int64_t qmin = a.int_value(3), qmax = a.int_value(4), dtype = a.int_value(5);
  if (!a.ok() || !check_range(a, out, qmin, qmax, dtype)) return a.error();
  ChannelParams p;
  if (!per_tensor_params(a, out, kTensorParams, &p) || !prepare(a, in, out, in)) return a.error();
  run_quantize(in, out, p, qmin, qmax, /*inv_float=*/false);
  return Error::Ok;
}

// out_dtype (None or float32) of a dequantize op at index i.
bool check_out_dtype(KernelArgs& a, size_t i) {
  if (a.is_none(i)) return true;
  const int64_t t = a.int_value(i);
  if (a.ok() && t != static_cast<int64_t>(ScalarType::Float32)) {
    return a.fail("dequantize supports out_dtype float32 only", Error::NotSupported);
  }
  return a.ok();
}

// dequantize_per_tensor[.tensor](input, scale, zero_point, quant_min, quant_max, dtype, *, out_dtype, out)
template <bool kTensorParams>
Error dequantize_per_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  const Tensor* in = a.tensor(0);
  Tensor* out = a.out(7);
  const int64_t qmin = a.int_value(3), qmax = a.int_value(4), dtype = a.int_value(5);
  if (!a.ok() || !check_range(a, in, qmin, qmax, dtype) || !check_out_dtype(a, 6)) return a.error();
  ChannelParams p;
  if (!per_tensor_params(a, in, kTensorParams, &p) || !prepare(a, in, out, out)) return a.error();
  run_dequantize(in, out, p);
  return Error::Ok;
}

// Per-channel parameters: scales [C] (float32/float64), zero points [C] (int32/int64, or None
// for dequantize), C the size of `axis` of `t`.
bool per_channel_params(KernelArgs& a, const Tensor* t, const Tensor* q, const Tensor* scales,
                        const Tensor* zero_points, int64_t axis, ChannelParams* p) {
  if (!a.ok()) return false;
  const int64_t dim = wrap_dim(axis, t->rank);
  if (dim < 0 || t->rank == 0) return a.fail("axis is out of range for the input");
  const int64_t channels = t->sizes[dim];
  if (scales->rank != 1 || scales->sizes[0] != channels) return a.fail("scales must be 1-D with the size of axis");
  if (!is_real_param(scales) || !scales->is_contiguous()) return a.fail("scales must be contiguous float32 or float64");
  if (zero_points != nullptr) {
    if (zero_points->rank != 1 || zero_points->sizes[0] != channels) {
      return a.fail("zero_points must be 1-D with the size of axis");
    }
    if (!is_int_param(zero_points) || !zero_points->is_contiguous()) {
      return a.fail("zero_points must be contiguous int32 or int64");
    }
  }
  for (int64_t c = 0; c < channels; ++c) {
    if (!valid_scale(real_at(scales, c))) return a.fail("every scale must be positive and finite");
    if (zero_points != nullptr && !valid_zero_point(q, int_at(zero_points, c))) {
      return a.fail("a zero point is outside the quantized dtype's range");
    }
  }
  p->scales = scales;
  p->zero_points = zero_points;
  p->channels = channels;
  p->inner = 1;
  for (int d = static_cast<int>(dim) + 1; d < t->rank; ++d) p->inner *= t->sizes[d];
  return true;
}

// quantize_per_channel(input, scales, zero_points, axis, quant_min, quant_max, dtype, out)
Error quantize_per_channel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(8)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* scales = a.tensor(1);
  const Tensor* zps = a.tensor(2);
  const int64_t axis = a.int_value(3), qmin = a.int_value(4), qmax = a.int_value(5), dtype = a.int_value(6);
  Tensor* out = a.out(7);
  if (!a.ok() || !check_range(a, out, qmin, qmax, dtype)) return a.error();
  ChannelParams p;
  if (!per_channel_params(a, in, out, scales, zps, axis, &p) || !prepare(a, in, out, in)) return a.error();
  run_quantize(in, out, p, qmin, qmax, /*inv_float=*/scales->dtype == ScalarType::Float32);
  return Error::Ok;
}

// dequantize_per_channel(input, scales, zero_points?, axis, quant_min, quant_max, dtype, *, out_dtype, out)
Error dequantize_per_channel(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* scales = a.tensor(1);
  const Tensor* zps = a.optional_tensor(2);
  const int64_t axis = a.int_value(3), qmin = a.int_value(4), qmax = a.int_value(5), dtype = a.int_value(6);
  Tensor* out = a.out(8);
  if (!a.ok() || !check_range(a, in, qmin, qmax, dtype) || !check_out_dtype(a, 7)) return a.error();
  ChannelParams p;
  if (!per_channel_params(a, in, in, scales, zps, axis, &p) || !prepare(a, in, out, out)) return a.error();
  run_dequantize(in, out, p);
  return Error::Ok;
}

// dequantize_per_channel_group(input, scales, zero_points?, quant_min, quant_max, dtype,
//                              group_size, output_dtype, out): group-wise weights (int4 values
// stored one per int8 byte, as PyTorch's 8da4w flow): input [N, K], scales and zero points
// [N, K / group_size]; out = (q - zero_point) * scale of the element's group.
Error dequantize_per_channel_group(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(9)) return a.error();
  const Tensor* in = a.tensor(0);
  const Tensor* scales = a.tensor(1);
  const Tensor* zps = a.optional_tensor(2);
  const int64_t qmin = a.int_value(3), qmax = a.int_value(4), dtype = a.int_value(5), group = a.int_value(6);
  const int64_t out_dtype = a.int_value(7);
  Tensor* out = a.out(8);
  if (!a.ok() || !check_range(a, in, qmin, qmax, dtype)) return a.error();
  if (out_dtype != static_cast<int64_t>(ScalarType::Float32)) {
    return ctx.fail(Error::NotSupported, "dequantize_per_channel_group supports output_dtype float32 only");
  }
  if (in->rank != 2) return ctx.fail(Error::InvalidArgument, "group-wise dequantize needs a 2-D [N, K] input");
  const int64_t rows = in->sizes[0], k = in->sizes[1];
  if (group < 1 || k % group != 0) return ctx.fail(Error::InvalidArgument, "group_size must divide the input's last dimension");
  const int64_t groups = k / group;
  if (scales->dtype != ScalarType::Float32 || scales->numel() != rows * groups || !scales->is_contiguous()) {
    return ctx.fail(Error::InvalidArgument, "scales must be contiguous float32 with N * K / group_size elements");
  }
  if (zps != nullptr && (!is_int_param(zps) || zps->numel() != rows * groups || !zps->is_contiguous())) {
    return ctx.fail(Error::InvalidArgument, "zero_points must be contiguous int32/int64 with N * K / group_size elements");
  }
  const float* s = scales->data_as<float>();
  for (int64_t g = 0; g < rows * groups; ++g) {
    if (!valid_scale(s[g])) return ctx.fail(Error::InvalidArgument, "every group scale must be positive and finite");
    if (zps != nullptr && !valid_zero_point(in, int_at(zps, g))) {
      return ctx.fail(Error::InvalidArgument, "a zero point is outside the quantized dtype's range");
    }
  }
  if (!require_contiguous(a, in) || !require_contiguous(a, out)) return a.error();
  if (out->dtype != ScalarType::Float32) return ctx.fail(Error::InvalidArgument, "the output must be float32");
  if (!resize_like(a, out, *in)) return a.error();
  float* x = out->data_as<float>();
  for (int64_t i = 0; i < rows * k; ++i) {
    const int64_t g = i / group;  // row-major: the group index of element i
    int64_t q = 0;
    switch (in->dtype) {
      case ScalarType::UInt8: q = in->data_as<uint8_t>()[i]; break;
      case ScalarType::Int8: q = in->data_as<int8_t>()[i]; break;
      case ScalarType::Int16: q = in->data_as<int16_t>()[i]; break;
      default: q = in->data_as<int32_t>()[i]; break;
    }
    const int64_t zp = zps != nullptr ? int_at(zps, g) : 0;
    x[i] = static_cast<float>(q - zp) * s[g];
  }
  return Error::Ok;
}

// choose_qparams.tensor(input, quant_min, quant_max, eps, dtype) -> (scale [1], zero_point [1]):
// the asymmetric per-tensor parameters PT2E's dynamic quantization computes for an activation
// on every call, as PyTorch's determine_qparams does it in float32:
//   lo = min(min(x), 0), hi = max(max(x), 0)
//   scale = max((hi - lo) / float(quant_max - quant_min), float(eps))
//   zero_point = clamp(quant_min - round_half_even(lo / scale), quant_min, quant_max)
// A NaN in the input has no parameters: InvalidArgument (PyTorch would propagate it into a NaN
// scale that the quantize after it cannot use).
Error choose_qparams_tensor(KernelContext& ctx, EValue** args, size_t n) {
  KernelArgs a(ctx, args, n);
  if (!a.expect(7)) return a.error();
  const Tensor* in = a.tensor(0);
  const int64_t qmin = a.int_value(1), qmax = a.int_value(2);
  const double eps = a.scalar(3);
  const int64_t dtype = a.int_value(4);
  Tensor* scale_out = a.out(5);
  Tensor* zp_out = a.out(6);
  if (!a.ok()) return a.error();
  if (in->dtype != ScalarType::Float32) return ctx.fail(Error::NotSupported, "choose_qparams supports float32 inputs");
  if (!require_contiguous(a, in)) return a.error();
  int64_t lo = 0, hi = 0;
  if (dtype < 0 || dtype > static_cast<int64_t>(ScalarType::Bool) ||
      !quantized_range(static_cast<ScalarType>(dtype), &lo, &hi)) {
    return ctx.fail(Error::InvalidArgument, "the dtype argument must be uint8, int8, int16 or int32");
  }
  if (qmin > qmax || qmin < lo || qmax > hi) {
    return ctx.fail(Error::InvalidArgument, "[quant_min, quant_max] must be a range of the dtype");
  }
  if (!(eps >= 0) || !std::isfinite(eps)) {
    return ctx.fail(Error::InvalidArgument, "eps must be finite and not negative");
  }
  if (!is_real_param(scale_out) || !is_int_param(zp_out)) {
    return ctx.fail(Error::InvalidArgument,
                    "the outputs must be a float32/float64 scale and an int32/int64 zero point");
  }
  const int64_t count = in->numel();
  if (count == 0) {
    return ctx.fail(Error::InvalidArgument, "choose_qparams of an empty tensor: no range to quantize");
  }
  Shape one;
  one.rank = 1;
  one.d[0] = 1;
  if (!resize_to(a, scale_out, one) || !resize_to(a, zp_out, one)) return a.error();
  const float* x = in->data_as<float>();
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    if (std::isnan(x[i])) return ctx.fail(Error::InvalidArgument, "choose_qparams: the input holds NaN");
    mn = x[i] < mn ? x[i] : mn;
    mx = x[i] > mx ? x[i] : mx;
  }
  float scale = (mx - mn) / static_cast<float>(qmax - qmin);
  if (!(scale >= static_cast<float>(eps))) scale = static_cast<float>(eps);
  if (!(scale > 0.0f) || !std::isfinite(scale)) {
    return ctx.fail(Error::InvalidArgument, "choose_qparams: no finite positive scale for this range");
  }
  const float shift = std::nearbyint(mn / scale);
  int64_t zp = qmin - static_cast<int64_t>(shift);
  zp = zp < qmin ? qmin : zp > qmax ? qmax : zp;
  if (scale_out->dtype == ScalarType::Float64) scale_out->data_as<double>()[0] = scale;
  else scale_out->data_as<float>()[0] = scale;
  if (zp_out->dtype == ScalarType::Int64) zp_out->data_as<int64_t>()[0] = zp;
  else zp_out->data_as<int32_t>()[0] = static_cast<int32_t>(zp);
  return Error::Ok;
}

}  // namespace

EMBER_REGISTER_KERNEL("quantized_decomposed::choose_qparams.tensor", choose_qparams_tensor);
EMBER_REGISTER_KERNEL("quantized_decomposed::dequantize_per_channel_group.default", dequantize_per_channel_group);
EMBER_REGISTER_KERNEL("quantized_decomposed::quantize_per_tensor.default", quantize_per_tensor<false>);
EMBER_REGISTER_KERNEL("quantized_decomposed::quantize_per_tensor.tensor", quantize_per_tensor<true>);
EMBER_REGISTER_KERNEL("quantized_decomposed::dequantize_per_tensor.default", dequantize_per_tensor<false>);
EMBER_REGISTER_KERNEL("quantized_decomposed::dequantize_per_tensor.tensor", dequantize_per_tensor<true>);
EMBER_REGISTER_KERNEL("quantized_decomposed::quantize_per_channel.default", quantize_per_channel);
EMBER_REGISTER_KERNEL("quantized_decomposed::dequantize_per_channel.default", dequantize_per_channel);

}  // namespace portable
}  // namespace ember
