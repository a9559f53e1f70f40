// The integer layers: ember_quantized::conv2d -> Conv2d / DepthWiseConv2d, ember_quantized::linear
// -> FullyConnected; int8 weights per output channel (QNN's axis scale-offset, symmetric), the
// float bias as int32 on the grid s_in * s_w[o], and the output clamp as ReluMinMax. The same for
// 16-bit activations (a16w8), which stay in PyTorch's reference form: aten::conv2d / linear
// reading a dequantize_per_channel of the int8 weight.
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
  if (ctx.float_graph) return "fp16 graph: integer layers stay out";
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

// A layer's operands, from either form: ember_quantized::conv2d / linear (int8 activations) or
// PyTorch's reference form aten::conv2d / linear(dequantize(x), dequantize_per_channel(W), bias)
// (16-bit activations, a16w8, which Ember's integer kernels do not take).
struct LayerOperands {
  int input = -1;
  const Value* weight = nullptr;  // int8 constant [O, ...] (float32 in an fp16 graph)
  std::vector<float> scales;      // per output channel
  const float* bias = nullptr;    // float [O] or null
  std::vector<int64_t> stride{1, 1}, pad{0, 0}, dilation{1, 1};
  int64_t groups = 1;
  std::vector<float> dequantized;  // fp16 graphs: an int8 weight-only weight as floats [O, I]
  bool clamp = false;  // output_min / output_max arguments at kConvOut / kLinearOut + 2, + 3
};

const float* float_data(const QnnLowering& ctx, const Value* v) {
  return v == nullptr ? nullptr : reinterpret_cast<const float*>(ctx.g.constants[static_cast<size_t>(v->constant)].data.data());
}

// The int32 bias on the grid s_in * s_w[o] (zeros when there is none).
void add_bias(QnnLowering& ctx, const Node& n, double in_scale, const float* wscale, int64_t channels,
              const float* bf, int* tensor) {
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

// The float bias as it is (zeros when there is none), for fp16 graphs.
void add_float_bias(QnnLowering& ctx, const Node& n, int64_t channels, const float* bf, int* tensor) {
  TensorSpec s;
  s.name = n.name + "_bias";
  s.type = kStatic;
  s.data_type = kFloat32;
  s.dims = {static_cast<uint32_t>(channels)};
  std::vector<float> b(static_cast<size_t>(channels), 0.0f);
  if (bf != nullptr) b.assign(bf, bf + channels);
  s.data.resize(b.size() * sizeof(float));
  std::memcpy(s.data.data(), b.data(), s.data.size());
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
int layer_output(QnnLowering& ctx, const Node& n, size_t o, bool clamp, Layout layout, int* clamp_input) {
  const int out = ctx.out_value(n);
  double lo = 0, hi = 0;
  if (!clamp || output_clamp(ctx, n, o, &lo, &hi) == nullptr) {
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

std::string lower_conv(QnnLowering& ctx, const Node& n, const LayerOperands& l) {
  const Value& x = ctx.g.values[static_cast<size_t>(l.input)];
  const Value& w = *l.weight;
  const uint8_t* wd = ctx.g.constants[w.constant].data.data();
  const size_t esize = element_size(w.dtype);  // 1 (int8) or 4 (float32)
  const int64_t co = w.sizes[0], ci_g = w.sizes[1], kh = w.sizes[2], kw = w.sizes[3];
  const bool depthwise = l.groups > 1 && l.groups == x.sizes[1] && co == l.groups;
  // PyTorch [O, I/g, KH, KW] -> QNN [KH, KW, I/g, O] (depthwise: [KH, KW, 1, O]).
  TensorSpec s;
  s.name = n.name + "_weight";
  s.type = kStatic;
  s.data_type = esize == 1 ? kSfixed8 : kFloat32;
  s.dims = {uint32_t(kh), uint32_t(kw), uint32_t(ci_g), uint32_t(co)};
  if (esize == 1) {
    s.quant.axis = 3;
    s.quant.axis_scales = l.scales;
  }
  s.data.resize(static_cast<size_t>(co * ci_g * kh * kw) * esize);
  for (int64_t o = 0; o < co; ++o)
    for (int64_t i = 0; i < ci_g; ++i)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t xx = 0; xx < kw; ++xx)
          std::memcpy(&s.data[static_cast<size_t>(((y * kw + xx) * ci_g + i) * co + o) * esize],
                      wd + static_cast<size_t>(((o * ci_g + i) * kh + y) * kw + xx) * esize, esize);
  const int weight = ctx.b->add_tensor(std::move(s));
  int bias = -1;
  if (esize == 1) {
    add_bias(ctx, n, ctx.quant.rep(l.input).scale, l.scales.data(), co, l.bias, &bias);
  } else {
    add_float_bias(ctx, n, co, l.bias, &bias);
  }
  std::vector<ParamSpec> params = {
      tensor_u32("stride", {uint32_t(l.stride[0]), uint32_t(l.stride[1])}),
      tensor_u32("pad_amount", {uint32_t(l.pad[0]), uint32_t(l.pad[0]), uint32_t(l.pad[1]), uint32_t(l.pad[1])}, {2, 2}),
      tensor_u32("dilation", {uint32_t(l.dilation[0]), uint32_t(l.dilation[1])}),
  };
  if (!depthwise) params.push_back(scalar_u32("group", static_cast<uint32_t>(l.groups)));
  const int in = ctx.input(l.input, Layout::Nhwc);
  int clamp_input = -1;
  const int out = layer_output(ctx, n, kConvOut, l.clamp, Layout::Nhwc, &clamp_input);
  ctx.b->add_node(depthwise ? "DepthWiseConv2d" : "Conv2d", {in, weight, bias}, {out}, params);
  add_clamp(ctx, n, kConvOut, Layout::Nhwc, clamp_input);
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string lower_linear(QnnLowering& ctx, const Node& n, const LayerOperands& l) {
  const Value& w = *l.weight;
  const int64_t units = w.sizes[0];
  TensorSpec s;
  s.name = n.name + "_weight";
  s.type = kStatic;
  const bool float_weight = w.dtype == ScalarType::Float32 || !l.dequantized.empty();
  s.data_type = float_weight ? kFloat32 : kSfixed8;
  s.dims = {uint32_t(units), uint32_t(w.sizes[1])};
  if (!float_weight) {
    s.quant.axis = 0;
    s.quant.axis_scales = l.scales;
  }
  if (!l.dequantized.empty()) {
    s.data.resize(l.dequantized.size() * sizeof(float));
    std::memcpy(s.data.data(), l.dequantized.data(), s.data.size());
  } else {
    s.data = ctx.g.constants[w.constant].data;
  }
  const int weight = ctx.b->add_tensor(std::move(s));
  int bias = -1;
  if (float_weight) {
    add_float_bias(ctx, n, units, l.bias, &bias);
  } else {
    add_bias(ctx, n, ctx.quant.rep(l.input).scale, l.scales.data(), units, l.bias, &bias);
  }
  const int in = ctx.input(l.input, Layout::Ember);
  int clamp_input = -1;
  const int out = layer_output(ctx, n, kLinearOut, l.clamp, Layout::Ember, &clamp_input);
  ctx.b->add_node("FullyConnected", {in, weight, bias}, {out});
  add_clamp(ctx, n, kLinearOut, Layout::Ember, clamp_input);
  return ctx.b->ok() ? "" : ctx.b->error();
}

// ember_quantized::conv2d / linear(x, s_x, zp_x, W, scales, bias, [stride, pad, dilation, groups,]
// s_out, zp_out, out_min, out_max).
LayerOperands integer_operands(const QnnLowering& ctx, const Node& n, bool conv) {
  LayerOperands l;
  l.input = ctx.arg_value(n, 0);
  l.weight = ctx.arg(n, 3);
  const Value* ws = ctx.arg(n, 4);
  const float* s = float_data(ctx, ws);
  l.scales.assign(s, s + ws->numel());
  l.bias = float_data(ctx, ctx.arg(n, 5));
  if (conv) {
    l.stride = int_list(n, 6, 2, 1), l.pad = int_list(n, 7, 2, 0), l.dilation = int_list(n, 8, 2, 1);
    l.groups = n.args[9].i;
  }
  l.clamp = true;
  return l;
}

// A layer's optional bias: none, or a float32 constant of `channels` values (into l->bias).
bool read_bias(const QnnLowering& ctx, const Value* bias, int64_t channels, LayerOperands* l) {
  if (bias != nullptr && (!constant(bias, ScalarType::Float32) || bias->numel() != channels)) return false;
  l->bias = float_data(ctx, bias);
  return true;
}

// The int8 weight behind a dequantize_per_channel(W, scales, zero_points, axis 0, -127|-128, 127,
// int8) node producing `v`, with its scales; false unless symmetric per output channel.
bool per_channel_weight(const QnnLowering& ctx, int v, LayerOperands* l) {
  if (v < 0) return false;
  const int p = ctx.g.values[static_cast<size_t>(v)].producer;
  if (p < 0) return false;
  const Node& dq = ctx.g.nodes[static_cast<size_t>(p)];
  if (dq.kernel_name() != kDequantizePerChannelOp || dq.args.size() < 7) return false;
  const Value* w = ctx.arg(dq, 0);
  const Value* s = ctx.arg(dq, 1);
  const Value* zp = ctx.arg(dq, 2);
  if (!constant(w, ScalarType::Int8) || s == nullptr || s->role != ValueRole::Constant || s->constant < 0 ||
      zp == nullptr || zp->role != ValueRole::Constant || zp->constant < 0) {
    return false;
  }
  if (dq.args[3].kind != Arg::Kind::Int || dq.args[3].i != 0 || w->sizes.empty() || s->numel() != w->sizes[0] ||
      zp->numel() != w->sizes[0]) {
    return false;
  }
  const std::vector<uint8_t>& sd = ctx.g.constants[static_cast<size_t>(s->constant)].data;
  const std::vector<uint8_t>& zd = ctx.g.constants[static_cast<size_t>(zp->constant)].data;
  l->scales.clear();
  for (int64_t c = 0; c < s->numel(); ++c) {
    double sc = 0;
    if (s->dtype == ScalarType::Float32) sc = reinterpret_cast<const float*>(sd.data())[c];
    else if (s->dtype == ScalarType::Float64) sc = reinterpret_cast<const double*>(sd.data())[c];
    else return false;
    int64_t z = 0;
    if (zp->dtype == ScalarType::Int64) z = reinterpret_cast<const int64_t*>(zd.data())[c];
    else if (zp->dtype == ScalarType::Int32) z = reinterpret_cast<const int32_t*>(zd.data())[c];
    else return false;
    if (z != 0 || !(sc > 0) || !std::isfinite(sc)) return false;
    l->scales.push_back(static_cast<float>(sc));
  }
  l->weight = w;
  return true;
}

// aten::conv2d(x, W, bias, stride, padding, dilation, groups) / aten::linear(x, W, bias) in
// reference form on 16-bit activations, or with float weights in an fp16 graph.
std::string reference_operands(const QnnLowering& ctx, const Node& n, bool conv, LayerOperands* l) {
  l->input = ctx.arg_value(n, 0);
  const int out = ctx.out_value(n);
  if (l->input < 0 || out < 0) return "not a tensor op";
  const Value& x = ctx.g.values[static_cast<size_t>(l->input)];
  if (x.is_dynamic() || ctx.g.values[static_cast<size_t>(out)].is_dynamic()) return "dynamic shape";
  if (ctx.float_graph) {  // float weights as they are
    if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
    const Value* w = ctx.arg(n, 1);
    if (!constant(w, ScalarType::Float32)) return "weight is not a float constant";
    l->weight = w;
  } else {
    const QRep& rx = ctx.quant.rep(l->input);
    const QRep& ro = ctx.quant.rep(out);
    if (!rx.valid || !ro.valid) return "float input or output not quantized";
    if (rx.dtype != ScalarType::Int16 || ro.dtype != ScalarType::Int16) {
      return "8-bit activations in reference form (Ember lowers those to ember_quantized:: layers first)";
    }
    if (!per_channel_weight(ctx, ctx.arg_value(n, 1), l)) return "weight is not a per-channel int8 dequantize of a constant";
  }
  if (!read_bias(ctx, ctx.arg(n, 2), l->weight->sizes[0], l)) return "bias is not a float constant";
  if (conv) {
    if (x.sizes.size() != 4 || l->weight->sizes.size() != 4) return "conv2d input is not 4-D";
    l->stride = int_list(n, 3, 2, 1), l->pad = int_list(n, 4, 2, 0), l->dilation = int_list(n, 5, 2, 1);
    if (l->stride.size() != 2 || l->pad.size() != 2 || l->dilation.size() != 2) return "non-static conv parameters";
    if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::Int) return "non-static groups";
    l->groups = n.args.size() > 6 ? n.args[6].i : 1;
    if (l->groups < 1) return "groups < 1";
  } else if (x.sizes.size() != 2 || l->weight->sizes.size() != 2) {
    return "linear input is not 2-D";
  }
  return "";
}

// ember_quantized::linear_weight_only(x, W int8 [N, K], scales [N, 1], group K, bits 8, bias): what
// Ember's weight-only pass makes of a reference-form linear; on 16-bit activations it is a16w8,
// in an fp16 graph a float FullyConnected with the dequantized weight.
std::string weight_only_operands(const QnnLowering& ctx, const Node& n, LayerOperands* l) {
  l->input = ctx.arg_value(n, 0);
  const int out = ctx.out_value(n);
  if (l->input < 0 || out < 0 || n.args.size() != 6) return "not a tensor op";
  if (ctx.float_graph) {
    // fp16 graph: the int8 weight dequantized at export (what a dynamically quantized or
    // weight-only linear maps to on the HTP: fp16 arithmetic, the int8 weights' values).
    if (ctx.g.values[static_cast<size_t>(l->input)].dtype != ScalarType::Float32 ||
        ctx.g.values[static_cast<size_t>(out)].dtype != ScalarType::Float32) {
      return "fp16 graph: not a float linear";
    }
  } else {
    const QRep& rx = ctx.quant.rep(l->input);
    const QRep& ro = ctx.quant.rep(out);
    if (!rx.valid || !ro.valid || rx.dtype != ScalarType::Int16 || ro.dtype != ScalarType::Int16) {
      return "float (weight-only) linear: its activations are not on 16-bit grids";
    }
  }
  const Value* w = ctx.arg(n, 1);
  const Value* s = ctx.arg(n, 2);
  if (!constant(w, ScalarType::Int8) || w->sizes.size() != 2 || n.args[4].kind != Arg::Kind::Int ||
      n.args[4].i != 8 || n.args[3].kind != Arg::Kind::Int || n.args[3].i != w->sizes[1]) {
    return "not per-channel int8 weights";
  }
  if (!constant(s, ScalarType::Float32) || s->numel() != w->sizes[0]) return "scales are not per output channel";
  if (!read_bias(ctx, ctx.arg(n, 5), w->sizes[0], l)) return "bias is not a float constant";
  if (ctx.g.values[static_cast<size_t>(l->input)].sizes.size() != 2) return "linear input is not 2-D";
  l->weight = w;
  const float* sc = float_data(ctx, s);
  l->scales.assign(sc, sc + s->numel());
  if (ctx.float_graph) {
    const int8_t* q = reinterpret_cast<const int8_t*>(ctx.g.constants[static_cast<size_t>(w->constant)].data.data());
    const int64_t rows = w->sizes[0], cols = w->sizes[1];
    l->dequantized.resize(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) l->dequantized[static_cast<size_t>(r * cols + c)] = float(q[r * cols + c]) * sc[r];
  }
  return "";
}

std::string conv_reference(const QnnLowering& c, const Node& n, LayerOperands* l) {
  return reference_operands(c, n, true, l);
}
std::string linear_reference(const QnnLowering& c, const Node& n, LayerOperands* l) {
  return reference_operands(c, n, false, l);
}

using OperandsFn = std::string (*)(const QnnLowering&, const Node&, LayerOperands*);
using LowerLayerFn = std::string (*)(QnnLowering&, const Node&, const LayerOperands&);

// An entry whose check and lowering both start from the layer's operands.
template <OperandsFn Operands, LowerLayerFn Lower>
void add_layer_entry(QnnOpTable& table, const char* op) {
  table.add(
      {op},
      [](const QnnLowering& c, const Node& n) {
        LayerOperands l;
        return Operands(c, n, &l);
      },
      [](QnnLowering& c, const Node& n) {
        LayerOperands l;
        std::string why = Operands(c, n, &l);
        return why.empty() ? Lower(c, n, l) : why;
      });
}

}  // namespace

void add_layer_ops(QnnOpTable& table) {
  table.add({kQuantizedConvOp}, [](const QnnLowering& c, const Node& n) { return check_layer(c, n, true); },
            [](QnnLowering& c, const Node& n) { return lower_conv(c, n, integer_operands(c, n, true)); });
  table.add({kQuantizedLinearOp}, [](const QnnLowering& c, const Node& n) { return check_layer(c, n, false); },
            [](QnnLowering& c, const Node& n) { return lower_linear(c, n, integer_operands(c, n, false)); });
  add_layer_entry<conv_reference, lower_conv>(table, "aten::conv2d.default");
  add_layer_entry<linear_reference, lower_linear>(table, "aten::linear.default");
  add_layer_entry<weight_only_operands, lower_linear>(table, "ember_quantized::linear_weight_only.default");
}

}  // namespace qnn
}  // namespace ember
