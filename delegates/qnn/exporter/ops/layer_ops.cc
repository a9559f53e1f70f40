// The integer layers: ember_quantized::conv2d -> Conv2d / DepthWiseConv2d, ember_quantized::linear
// -> FullyConnected; int8 weights per output channel (QNN's axis scale-offset, symmetric), the
// float bias as int32 on the grid s_in * s_w[o], and the output clamp as ReluMinMax.
#include <cmath>
#include <cstring>

#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Arg;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;

constexpr size_t kConvOut = 10, kLinearOut = 6;  // first output-quantization argument

bool constant(const Value* v, ScalarType t) {
  return v != nullptr && v->role == ValueRole::Constant && v->constant >= 0 && v->dtype == t;
}

std::string check_layer(const QnnLowering& ctx, const Node& n, bool conv) {
  const size_t o = conv ? kConvOut : kLinearOut;
  if (n.args.size() != o + 4) return "unexpected argument count";
  const int in = ctx.arg_value(n, 0), out = ctx.out_value(n);
  if (in < 0 || out < 0) return "not a tensor op";
  const Value& x = ctx.g.values[in];
  if (x.is_dynamic() || ctx.g.values[out].is_dynamic()) return "dynamic shape";
  const QRep& rx = ctx.quant.rep(in);
  if (!rx.valid || !ctx.quant.rep(out).valid) return "input or output without per-tensor quantization";
  if (rx.dtype != ctx.quant.rep(out).dtype) return "input and output of different integer types";
  if (std::fabs(rx.scale - number_arg(n, 1, 0)) > 1e-12 * rx.scale || n.args[2].kind != Arg::Kind::Int ||
      n.args[2].i != rx.zero_point) {
    return "input parameters differ from the producer's";
  }
  const Value* w = ctx.arg(n, 3);
  const Value* ws = ctx.arg(n, 4);
  const Value* bias = ctx.arg(n, 5);
  if (!constant(w, ScalarType::Int8)) return "weight is not a constant int8 tensor";
  if (!constant(ws, ScalarType::Float32) || ws->numel() != w->sizes[0]) return "weight scales are not per output channel";
  if (bias != nullptr && (!constant(bias, ScalarType::Float32) || bias->numel() != w->sizes[0])) return "bias is not a constant";
  if (conv) {
    if (x.sizes.size() != 4 || w->sizes.size() != 4) return "conv2d input is not 4-D";
    for (size_t i : {size_t(6), size_t(7), size_t(8)}) {
      if (int_list(n, i, 2, 0).size() != 2) return "non-static conv parameters";
    }
    if (n.args[9].kind != Arg::Kind::Int || n.args[9].i < 1) return "non-static groups";
  } else {
    if (x.sizes.size() != 2 || w->sizes.size() != 2) return "linear input is not 2-D";
  }
  return "";
}

// The int32 bias on the grid s_in * s_w[o] (zeros when there is none).
void add_bias(QnnLowering& ctx, const Node& n, double in_scale, const float* wscale, int64_t channels, int* tensor) {
  const Value* bias = ctx.arg(n, 5);
  const float* bf = bias ? reinterpret_cast<const float*>(ctx.g.constants[bias->constant].data.data()) : nullptr;
  TensorSpec s;
  s.name = n.name + "_bias";
  s.type = kStatic;
  s.data_type = kSfixed32;
  s.dims = {static_cast<uint32_t>(channels)};
  s.quant.axis = 0;
  std::vector<int32_t> q(static_cast<size_t>(channels), 0);
  for (int64_t c = 0; c < channels; ++c) {
    const double grid = in_scale * wscale[c];
    s.quant.axis_scales.push_back(static_cast<float>(grid));
    if (bf != nullptr && grid > 0) {
      const double v = std::nearbyint(bf[c] / grid);
      q[static_cast<size_t>(c)] = static_cast<int32_t>(std::fmax(-2147483648.0, std::fmin(2147483647.0, v)));
    }
  }
  s.data.resize(q.size() * sizeof(int32_t));
  std::memcpy(s.data.data(), q.data(), s.data.size());
  *tensor = ctx.b->add_tensor(std::move(s));
}

// The clamp op for the layer's output_min / output_max (arguments o + 2, o + 3) on its output
// grid, with its real bounds in *lo, *hi (clamp_op); null when the clamp covers the grid.
const char* output_clamp(const QnnLowering& ctx, const Node& n, size_t o, double* lo, double* hi) {
  const QRep& r = ctx.quant.rep(ctx.out_value(n));
  *lo = -1e30;
  *hi = 1e30;
  if (n.args[o + 2].kind == Arg::Kind::Int) *lo = double(n.args[o + 2].i - r.zero_point) * r.scale;
  if (n.args[o + 3].kind == Arg::Kind::Int) *hi = double(n.args[o + 3].i - r.zero_point) * r.scale;
  return clamp_op(r, lo, hi);
}

// The layer's output clamp (output_min / output_max, e.g. a fused relu or relu6) as an op on
// the output grid (clamp_op), or none when it covers the grid. Returns the tensor the layer
// writes; *clamp_input >= 0 when a clamp op follows (add_clamp).
int layer_output(QnnLowering& ctx, const Node& n, size_t o, Layout layout, int* clamp_input) {
  const int out = ctx.out_value(n);
  double lo = 0, hi = 0;
  if (output_clamp(ctx, n, o, &lo, &hi) == nullptr) {
    *clamp_input = -1;
    return ctx.output(out, layout);
  }
  TensorSpec s = ctx.spec_for(out, layout, false);
  s.name += "_unclamped";
  *clamp_input = ctx.b->add_tensor(std::move(s));
  return *clamp_input;
}
void add_clamp(QnnLowering& ctx, const Node& n, size_t o, Layout layout, int clamp_input) {
  if (clamp_input < 0) return;
  const int out = ctx.out_value(n);
  double lo = 0, hi = 0;
  const char* type = output_clamp(ctx, n, o, &lo, &hi);
  std::vector<ParamSpec> params;
  if (std::string(type) == "ReluMinMax") params = {scalar_f32("min_value", float(lo)), scalar_f32("max_value", float(hi))};
  ctx.b->add_node(type, {clamp_input}, {ctx.output(out, layout)}, params);
}

std::string lower_conv(QnnLowering& ctx, const Node& n) {
  const Value& x = *ctx.arg(n, 0);
  const Value& w = *ctx.arg(n, 3);
  const float* ws = reinterpret_cast<const float*>(ctx.g.constants[ctx.arg(n, 4)->constant].data.data());
  const int8_t* wq = reinterpret_cast<const int8_t*>(ctx.g.constants[w.constant].data.data());
  const int64_t co = w.sizes[0], ci_g = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  const int64_t groups = n.args[9].i;
  const bool depthwise = groups > 1 && groups == x.sizes[1] && co == groups;
  // PyTorch [O, I/g, KH, KW] -> QNN [KH, KW, I/g, O] (depthwise: [KH, KW, 1, O]).
  TensorSpec s;
  s.name = n.name + "_weight";
  s.type = kStatic;
  s.data_type = kSfixed8;
  s.dims = {uint32_t(kh), uint32_t(kw), uint32_t(ci_g), uint32_t(co)};
  s.quant.axis = 3;
  s.quant.axis_scales.assign(ws, ws + co);
  s.data.resize(static_cast<size_t>(co * ci_g * kh * kw));
  for (int64_t o = 0; o < co; ++o)
    for (int64_t i = 0; i < ci_g; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t xx = 0; xx < kw; ++xx)
          s.data[static_cast<size_t>(((y * kw + xx) * ci_g + i) * co + o)] =
              static_cast<uint8_t>(wq[((o * ci_g + i) * kh + y) * kw + xx]);
  const int weight = ctx.b->add_tensor(std::move(s));
  int bias = -1;
  add_bias(ctx, n, ctx.quant.rep(ctx.arg_value(n, 0)).scale, ws, co, &bias);
  const std::vector<int64_t> stride = int_list(n, 6, 2, 1), pad = int_list(n, 7, 2, 0), dil = int_list(n, 8, 2, 1);
  std::vector<ParamSpec> params = {
      tensor_u32("stride", {uint32_t(stride[0]), uint32_t(stride[1])}),
      tensor_u32("pad_amount", {uint32_t(pad[0]), uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[1])}, {2, 2}),
      tensor_u32("dilation", {uint32_t(dil[0]), uint32_t(dil[1])}),
  };
  if (!depthwise) params.push_back(scalar_u32("group", static_cast<uint32_t>(groups)));
  const int in = ctx.input(ctx.arg_value(n, 0), Layout::Nhwc);
  int clamp_input = -1;
  const int out = layer_output(ctx, n, kConvOut, Layout::Nhwc, &clamp_input);
  ctx.b->add_node(depthwise ? "DepthWiseConv2d" : "Conv2d", {in, weight, bias}, {out}, params);
  add_clamp(ctx, n, kConvOut, Layout::Nhwc, clamp_input);
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string lower_linear(QnnLowering& ctx, const Node& n) {
  const Value& w = *ctx.arg(n, 3);
  const float* ws = reinterpret_cast<const float*>(ctx.g.constants[ctx.arg(n, 4)->constant].data.data());
  const int64_t units = w.sizes[0];
  TensorSpec s;
  s.name = n.name + "_weight";
  s.type = kStatic;
  s.data_type = kSfixed8;
  s.dims = {uint32_t(units), uint32_t(w.sizes[1])};
  s.quant.axis = 0;
  s.quant.axis_scales.assign(ws, ws + units);
  s.data = ctx.g.constants[w.constant].data;
  const int weight = ctx.b->add_tensor(std::move(s));
  int bias = -1;
  add_bias(ctx, n, ctx.quant.rep(ctx.arg_value(n, 0)).scale, ws, units, &bias);
  const int in = ctx.input(ctx.arg_value(n, 0), Layout::Ember);
  int clamp_input = -1;
  const int out = layer_output(ctx, n, kLinearOut, Layout::Ember, &clamp_input);
  ctx.b->add_node("FullyConnected", {in, weight, bias}, {out});
  add_clamp(ctx, n, kLinearOut, Layout::Ember, clamp_input);
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_layer_ops(QnnOpTable& table) {
  table.add({kQuantizedConvOp}, [](const QnnLowering& c, const Node& n) { return check_layer(c, n, true); }, lower_conv);
  table.add({kQuantizedLinearOp}, [](const QnnLowering& c, const Node& n) { return check_layer(c, n, false); },
            lower_linear);
}

}  // namespace qnn
}  // namespace ember
