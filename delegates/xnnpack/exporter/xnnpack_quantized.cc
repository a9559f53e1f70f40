#include "delegates/xnnpack/exporter/xnnpack_quantized.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr const char* kQuantize = "quantized_decomposed::quantize_per_tensor.default";
constexpr const char* kDequantize = "quantized_decomposed::dequantize_per_tensor.default";
constexpr const char* kConv = "ember_quantized::conv2d.default";
constexpr const char* kLinear = "ember_quantized::linear.default";


bool activation(const Value* v, ScalarType dtype) {
  return v != nullptr && !is_const(v) && v->type == ValueType::Tensor && v->dtype == dtype && !v->is_dynamic();
}
bool number(const Node& n, size_t i, double* v) {
  if (i >= n.args.size()) return false;
  if (n.args[i].kind == Arg::Kind::Double) *v = n.args[i].d;
  else if (n.args[i].kind == Arg::Kind::Int) *v = double(n.args[i].i);
  else return false;
  return true;
}
bool integer(const Node& n, size_t i, int64_t* v) {
  if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Int) return false;
  *v = n.args[i].i;
  return true;
}
std::vector<int64_t> pair(const Node& n, size_t i) {
  std::vector<int64_t> v = i < n.args.size() ? n.args[i].ints : std::vector<int64_t>();
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

// A scale XNNPACK takes as a float (and inverts: quantize) without overflow or denormals.
bool good_scale(double s) {
  const float f = float(s);
  return std::isfinite(f) && f >= std::numeric_limits<float>::min() && std::isfinite(1.0f / f);
}
bool int8_zero_point(int64_t zp) { return zp >= -128 && zp <= 127; }

// Per-tensor parameters of a quantize/dequantize_per_tensor.default node.
struct TensorQ {
  double scale = 0;
  int64_t zero_point = 0, qmin = 0, qmax = 0, dtype = -1;
};
bool qdq_params(const Node& n, TensorQ* q) {
  return number(n, 1, &q->scale) && integer(n, 2, &q->zero_point) && integer(n, 3, &q->qmin) &&
         integer(n, 4, &q->qmax) && integer(n, 5, &q->dtype);
}

// Argument positions of the ember_quantized operators (docs/pte-format.md).
struct QuantOpArgs {
  size_t out_first;  // output_scale; then output_zero_point, output_min, output_max
};
QuantOpArgs op_args(const std::string& k) { return QuantOpArgs{k == kConv ? size_t(10) : size_t(6)}; }


// Why the integer conv2d / linear node cannot run as XNNPACK's qs8-qc8w kernels ("" if it can).
std::string quantized_layer_reason(const Graph& g, const Node& n, bool conv) {
  const Value* x = tensor_arg(g, n, 0);
  const Value* w = tensor_arg(g, n, 3);
  const Value* scales = tensor_arg(g, n, 4);
  const Value* bias = tensor_arg(g, n, 5);
  const size_t o = op_args(key(n)).out_first;
  if (n.args.size() != o + 4) return "unexpected argument count";
  if (!activation(x, ScalarType::Int8)) return "input is not a static int8 activation (uint8 has no qc8w kernel)";
  if (!activation(&g.values[n.output_values()[0]], ScalarType::Int8)) return "output is not a static int8 tensor";
  if (!is_const(w) || w->dtype != ScalarType::Int8 || w->sizes.size() != (conv ? 4u : 2u)) {
    return "weight is not a constant int8 tensor";
  }
  const int64_t channels = w->sizes[0];
  if (!is_const(scales) || scales->dtype != ScalarType::Float32 || scales->sizes != std::vector<int64_t>{channels}) {
    return "weight scales are not a constant float32 [output channels]";
  }
  if (n.args[5].kind != Arg::Kind::None &&
      (!is_const(bias) || bias->dtype != ScalarType::Float32 || bias->sizes != std::vector<int64_t>{channels})) {
    return "bias is not a constant float32 [output channels]";
  }
  double in_scale = 0, out_scale = 0;
  int64_t in_zp = 0, out_zp = 0, out_min = 0, out_max = 0;
  if (!number(n, 1, &in_scale) || !integer(n, 2, &in_zp) || !number(n, o, &out_scale) ||
      !integer(n, o + 1, &out_zp) || !integer(n, o + 2, &out_min) || !integer(n, o + 3, &out_max)) {
    return "quantization parameters are not constants";
  }
  if (!good_scale(in_scale) || !good_scale(out_scale) || !int8_zero_point(in_zp) || !int8_zero_point(out_zp)) {
    return "scale or zero point out of XNNPACK's range";
  }
  if (out_min < -128 || out_max > 127 || out_min >= out_max) return "output range empty or outside int8";
  const float* s = float_data(g, scales);
  const float* b = is_const(bias) ? float_data(g, bias) : nullptr;
  for (int64_t c = 0; c < channels; ++c) {
    if (!good_scale(s[c])) return "a weight scale is not a positive normal float";
    // XNNPACK's fp32 requantization takes input_scale * weight_scale / output_scale < 256.
    const float product = float(in_scale) * s[c];
    if (!(double(product) / out_scale < 256.0) || !(product > 0)) return "requantization scale >= 256";
    if (b != nullptr && !(std::fabs(double(b[c]) / double(product)) < 2147483520.0)) return "bias overflows int32";
  }
  if (conv) {
    int64_t groups = 0;
    const std::vector<int64_t> stride = pair(n, 6), padding = pair(n, 7), dilation = pair(n, 8);
    if (!integer(n, 9, &groups) || stride.size() != 2 || padding.size() != 2 || dilation.size() != 2) {
      return "stride, padding, dilation, groups are not constants";
    }
    if (x->sizes.size() != 4 || groups < 1 || x->sizes[1] % groups || channels % groups ||
        w->sizes[1] * groups != x->sizes[1]) {
      return "needs a 4D input and groups dividing the channels";
    }
    for (int i = 0; i < 2; ++i) {
      if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0) return "bad stride, dilation or padding";
    }
  } else if (x->sizes.empty() || x->sizes.back() != w->sizes[1]) {
    return "input's last dim != in features";
  }
  return "";
}

// Reads the bytes of an int8 weight permuted for XNNPACK and registers them as a blob
// constant: the original slot when the permutation left them unchanged (1x1 filters), else a
// new graph constant replacing the original.
uint32_t int8_weight(const Graph& g, exporter::ConstantSlots& slots, XnnBlobBuilder& b, const Value* w,
                     const char* suffix, const std::vector<size_t>& dims, const std::vector<int8_t>& data, XnnQuant q) {
  const exporter::Constant& c = g.constants[w->constant];
  if (c.data.size() == data.size() && std::memcmp(c.data.data(), data.data(), data.size()) == 0) {
    return b.quantized_constant_in_slot(fb::DataType::QCInt8, dims, std::move(q), int32_t(slots.existing(w->constant)));
  }
  std::vector<uint8_t> bytes(data.size());
  if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
  const uint32_t slot = slots.add(w->constant, c.name + suffix, ScalarType::Int8,
                                  std::vector<int64_t>(dims.begin(), dims.end()), std::move(bytes));
  return b.quantized_constant_in_slot(fb::DataType::QCInt8, dims, std::move(q), int32_t(slot));
}

// A real-valued output bound of a quantized integer bound (open at the dtype's end):
// XNNPACK quantizes it back with the output's parameters, which gives `q` exactly.
float real_bound(int64_t q, int64_t end, double scale, int64_t zp, float open) {
  return q == end ? open : float(double(q - zp) * float(scale));
}

bool same_params(const XnnTensorSpec& t, double scale, int64_t zp) {
  return t.dtype == fb::DataType::QInt8 && t.quant.scale == float(scale) && t.quant.zero_point == zp;
}

}  // namespace

bool int8_value_params(const Graph& g, int value, float* scale, int32_t* zero_point) {
  auto from = [&](const Node& n, bool output) {
    const std::string k = key(n);
    double s = 0;
    int64_t z = 0;
    if (k == kQuantize || k == kDequantize) {
      if (!number(n, 1, &s) || !integer(n, 2, &z)) return false;
    } else if (k == kConv || k == kLinear) {
      const size_t at = output ? op_args(k).out_first : 1;
      if (!number(n, at, &s) || !integer(n, at + 1, &z)) return false;
    } else {
      return false;
    }
    *scale = float(s);
    *zero_point = int32_t(z);
    return true;
  };
  const int p = g.values[value].producer;
  if (p >= 0 && !g.nodes[p].erased && (key(g.nodes[p]) == kQuantize || key(g.nodes[p]) == kConv ||
                                       key(g.nodes[p]) == kLinear)) {
    return from(g.nodes[p], true);
  }
  for (const Node& n : g.nodes) {
    if (n.erased || n.args.empty() || n.args[0].kind != Arg::Kind::Tensor || n.args[0].ref != value) continue;
    if (key(n) == kDequantize || key(n) == kConv || key(n) == kLinear) return from(n, false);
  }
  return false;
}

QuantizedFusion plan_quantized_fusion(const Graph& g, const exporter::Partition& p, const std::map<int, int>& fused_into,
                                      const std::set<int>& folded) {
  QuantizedFusion plan;
  const std::set<int> in_partition(p.nodes.begin(), p.nodes.end());
  const std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  const std::vector<int> uses = g.use_counts();
  std::map<int, std::vector<int>> readers;  // value -> partition nodes reading it
  for (int i : p.nodes) {
    for (const Arg& a : g.nodes[i].args) {
      for (int v : a.value_refs()) readers[v].push_back(i);
    }
  }
  // A value read once, inside the partition, and not a partition output.
  auto private_value = [&](int v) { return v >= 0 && uses[v] == 1 && !outputs.count(v); };
  for (int i : p.nodes) {
    if (folded.count(i)) continue;
    const Node& n = g.nodes[i];
    const XnnOpTraits& traits = op_traits(n);  // which int8 kernel, if any, runs the op
    if (traits.int8 == Int8Fusion::kNone) continue;
    const bool passes = traits.int8 == Int8Fusion::kExact;
    const bool mul = traits.int8 == Int8Fusion::kMul;
    const bool add = traits.int8 == Int8Fusion::kAdd || mul;  // two dequantized operands, requantized
    std::vector<int> ins;
    if (traits.tensor_list_input) {
      ins = n.args[0].refs;
    } else {
      ins.push_back(n.args[0].ref);
      if (add) {
        if (tensor_arg(g, n, 1) == nullptr) continue;  // x + scalar: no int8 form here
        ins.push_back(n.args[1].ref);
      }
    }
    // The quantize reading the op's (or its folded clamp's) output.
    int out = n.output_values()[0];
    auto f = fused_into.find(i);
    if (f != fused_into.end()) out = g.nodes[f->second].output_values()[0];
    if (!private_value(out) || readers[out].size() != 1) continue;
    const int q_node = readers[out][0];
    TensorQ q;
    if (key(g.nodes[q_node]) != kQuantize || !qdq_params(g.nodes[q_node], &q)) continue;
    std::vector<int> dqs;
    bool ok = true;
    double product = 1;  // mul: the product of the input scales
    for (int v : ins) {
      const int d = v >= 0 ? g.values[v].producer : -1;
      TensorQ dq;
      ok = ok && d >= 0 && in_partition.count(d) && key(g.nodes[d]) == kDequantize && private_value(v) &&
           qdq_params(g.nodes[d], &dq);
      if (!ok) break;
      if (passes) {
        ok = float(dq.scale) == float(q.scale) && dq.zero_point == q.zero_point;  // one quantization: exact
      } else if (mul) {
        product *= dq.scale;
      } else {
        // XNNPACK's qs8 add / mean requantize with input_scale / output_scale; keep to the
        // range its fixed-point kernels were designed for.
        const double ratio = dq.scale / q.scale;
        ok = ratio >= 1.0 / 1024 && ratio < 256;
      }
      dqs.push_back(d);
    }
    if (ok && mul) {  // qs8 multiply requantizes with input_scale_a * input_scale_b / output_scale
      const double ratio = product / q.scale;
      ok = ratio >= 1.0 / 65536 && ratio < 256;
    }
    if (!ok) continue;
    plan.aliases.insert(dqs.begin(), dqs.end());
    plan.aliases.insert(q_node);
    plan.fused_ops++;
  }
  return plan;
}

std::string alias_folded_qdq(XnnLowering& ctx, const Node& n) {
  const int from = n.args[0].ref, to = n.output_values()[0];
  auto it = ctx.id.find(from);
  if (it == ctx.id.end()) return "xnnpack preprocess: folded Q/DQ input not mapped";
  if (key(n) == kQuantize) {  // the op's output becomes int8
    ctx.b->set_qint8(it->second, float(n.args[1].kind == Arg::Kind::Double ? n.args[1].d : double(n.args[1].i)),
                     int32_t(n.args[2].i));
  }
  ctx.id[to] = it->second;
  return "";
}

namespace {

// The blob tensor of n's int8 (or float, quantize) input; "" or why not.
std::string mapped_input(const XnnLowering& ctx, const Node& n, uint32_t* in) {
  auto it = ctx.id.find(n.args[0].ref);
  if (it == ctx.id.end()) return "xnnpack preprocess: " + key(n) + " input not mapped";
  *in = it->second;
  return "";
}

std::string mismatch(const XnnBlobBuilder& b, const Node& n, uint32_t in, double scale, int64_t zp) {
  return "xnnpack preprocess: node " + n.name + " (" + key(n) + ") reads an int8 tensor quantized with scale " +
         std::to_string(b.tensor(in).quant.scale) + ", zero point " + std::to_string(b.tensor(in).quant.zero_point) +
         " as scale " + std::to_string(scale) + ", zero point " + std::to_string(zp) +
         ": inconsistent quantization parameters";
}

// quantize / dequantize_per_tensor: int8 with XNNPACK's scale and zero-point ranges.
std::string convert_reason(const Graph& g, const Node& n, TensorQ* q) {
  if (n.output_values().size() != 1) return "not a single-output op";
  if (!qdq_params(n, q)) return "quantization parameters are not constants";
  if (q->dtype != int64_t(ScalarType::Int8)) return "not int8 (XNNPACK's qs8 only)";
  if (!good_scale(q->scale) || !int8_zero_point(q->zero_point)) return "scale or zero point out of XNNPACK's range";
  return "";
}

std::string check_quantize(const XnnLowering& ctx, const Node& n) {
  TensorQ q;
  const std::string reason = convert_reason(ctx.g, n, &q);
  if (!reason.empty()) return reason;
  if (q.qmin != -128 || q.qmax != 127) return "restricted quant_min/quant_max (XNNPACK converts to [-128, 127])";
  if (!activation(tensor_arg(ctx.g, n, 0), ScalarType::Float32) ||
      !activation(&ctx.g.values[n.output_values()[0]], ScalarType::Int8)) {
    return "not float32 -> int8";
  }
  return "";
}

std::string check_dequantize(const XnnLowering& ctx, const Node& n) {
  TensorQ q;
  const std::string reason = convert_reason(ctx.g, n, &q);
  if (!reason.empty()) return reason;
  if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::None &&
      !(n.args[6].kind == Arg::Kind::Int && n.args[6].i == int64_t(ScalarType::Float32))) {
    return "dequantizes to another float type";
  }
  if (!activation(tensor_arg(ctx.g, n, 0), ScalarType::Int8) ||
      !activation(&ctx.g.values[n.output_values()[0]], ScalarType::Float32)) {
    return "not int8 -> float32";
  }
  return "";
}

// A Convert node (f32 <-> qint8); a dequantize must read the int8 tensor as it was quantized.
template <bool kQuantizeOp>
std::string lower_convert(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  uint32_t in = kInvalidId;
  const std::string unmapped = mapped_input(ctx, n, &in);
  if (!unmapped.empty()) return unmapped;
  TensorQ q;
  qdq_params(n, &q);
  if (!kQuantizeOp && !same_params(b.tensor(in), q.scale, q.zero_point)) return mismatch(b, n, in, q.scale, q.zero_point);
  ctx.result = b.node(fb::OpType::Convert, {in});
  if (kQuantizeOp) b.set_qint8(ctx.result, float(q.scale), int32_t(q.zero_point));
  return "";
}

template <bool kConv2d>
std::string check_quantized_layer(const XnnLowering& ctx, const Node& n) {
  if (n.output_values().size() != 1) return "not a single-output op";
  return quantized_layer_reason(ctx.g, n, kConv2d);
}

// ember_quantized::conv2d / linear as XNNPACK's qs8-qc8w (depthwise) convolution / fully connected.
template <bool kConv2d>
std::string lower_quantized_layer(XnnLowering& ctx, const Node& n) {
  const Graph& g = ctx.g;
  XnnBlobBuilder& b = *ctx.b;
  exporter::ConstantSlots& slots = *ctx.slots;
  uint32_t in = kInvalidId;
  const std::string unmapped = mapped_input(ctx, n, &in);
  if (!unmapped.empty()) return unmapped;
  const size_t o = op_args(key(n)).out_first;
  double in_scale = 0, out_scale = 0;
  int64_t in_zp = 0, out_zp = 0, out_min = 0, out_max = 0;
  number(n, 1, &in_scale), integer(n, 2, &in_zp), number(n, o, &out_scale), integer(n, o + 1, &out_zp);
  integer(n, o + 2, &out_min), integer(n, o + 3, &out_max);
  if (!same_params(b.tensor(in), in_scale, in_zp)) return mismatch(b, n, in, in_scale, in_zp);
  const Value* w = tensor_arg(g, n, 3);
  const Value* bias = tensor_arg(g, n, 5);
  const float* ws = float_data(g, tensor_arg(g, n, 4));
  const size_t channels = size_t(w->sizes[0]);
  const int8_t* wd = reinterpret_cast<const int8_t*>(g.constants[w->constant].data.data());
  XnnQuant wq;  // the weight scales are read in place from their constant, not copied
  wq.scales_slot = int32_t(slots.existing(tensor_arg(g, n, 4)->constant));
  slots.read_at_init(uint32_t(wq.scales_slot));  // the runtime validates every scale
  XnnNodeParams prm;
  prm.output_min = real_bound(out_min, -128, out_scale, out_zp, -std::numeric_limits<float>::infinity());
  prm.output_max = real_bound(out_max, 127, out_scale, out_zp, std::numeric_limits<float>::infinity());
  fb::OpType op = fb::OpType::FullyConnected;
  uint32_t filter = kInvalidId;
  if (kConv2d) {
    const std::vector<int64_t> stride = pair(n, 6), pad = pair(n, 7), dil = pair(n, 8);
    const int64_t groups = n.args[9].i, in_channels = g.values[n.args[0].ref].sizes[1];
    const size_t I = size_t(w->sizes[1]), KH = size_t(w->sizes[2]), KW = size_t(w->sizes[3]);
    prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
    prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
    prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
    prm.kernel = {{uint32_t(KH), uint32_t(KW)}};
    if (groups > 1 && groups == in_channels && I == 1 && channels % size_t(groups) == 0) {
      op = fb::OpType::DepthwiseConvolution2d;
      prm.groups = uint32_t(channels / size_t(in_channels));  // depth multiplier
      wq.channel_dim = 3;
      filter = int8_weight(g, slots, b, w, ".1hwo", {1, KH, KW, channels},
                           depthwise_oihw_to_1hwo(wd, channels, KH, KW), std::move(wq));
    } else {
      op = fb::OpType::Convolution2d;
      prm.groups = uint32_t(groups);
      filter = int8_weight(g, slots, b, w, ".ohwi", {channels, KH, KW, I}, oihw_to_ohwi(wd, channels, I, KH, KW),
                           std::move(wq));
    }
  } else {
    const size_t K = size_t(w->sizes[1]);
    filter = b.quantized_constant_in_slot(fb::DataType::QCInt8, {channels, K}, std::move(wq),
                                          int32_t(slots.existing(w->constant)));
  }
  std::vector<uint32_t> ins = {in, filter};
  if (is_const(bias)) {
    // int32 bias in units of input_scale * weight_scale[o] (the product in float, as the
    // portable kernel forms it), rounded half to even: it differs from the float bias by at
    // most half a unit of the integer sum.
    const float* bf = float_data(g, bias);
    std::vector<int32_t> bi(channels);
    XnnQuant bq;
    for (size_t c = 0; c < channels; ++c) {
      const float s = float(in_scale) * ws[c];
      bi[c] = int32_t(std::nearbyint(double(bf[c]) / double(s)));
      bq.channel_scales.push_back(s);
    }
    std::vector<uint8_t> bytes(channels * sizeof(int32_t));
    if (!bytes.empty()) std::memcpy(bytes.data(), bi.data(), bytes.size());
    const exporter::Constant& c = g.constants[bias->constant];
    const uint32_t slot = slots.add(bias->constant, c.name + ".int32", ScalarType::Int32, {int64_t(channels)},
                                    std::move(bytes));
    ins.push_back(b.quantized_constant_in_slot(fb::DataType::QCInt32, {channels}, std::move(bq), int32_t(slot)));
  }
  ctx.result = b.node(op, ins, prm);
  b.set_qint8(ctx.result, float(out_scale), int32_t(out_zp));
  return "";
}

}  // namespace

void add_quantized_ops(XnnOpTable& t) {
  XnnOpTraits quantized;  // int8 tensors keep the layout they are made in
  quantized.quantized = true;
  XnnOpTraits convert = quantized;  // Convert nodes are elementwise
  convert.layout = any_layout;
  t.add({kQuantize}, check_quantize, lower_convert<true>, convert);
  t.add({kDequantize}, check_dequantize, lower_convert<false>, convert);
  XnnOpTraits conv = quantized;
  conv.layout = nhwc_layout;
  t.add({kConv}, check_quantized_layer<true>, lower_quantized_layer<true>, conv);
  t.add({kLinear}, check_quantized_layer<false>, lower_quantized_layer<false>, quantized);
}

}  // namespace xnnpack
}  // namespace ember
