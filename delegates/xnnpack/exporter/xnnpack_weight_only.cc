#include "delegates/xnnpack/exporter/xnnpack_weight_only.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"
#include "runtime/core/float16.h"

namespace ember {
namespace xnnpack {
namespace {

constexpr const char* kLinearWeightOnly = "ember_quantized::linear_weight_only.default";
constexpr const char* kChooseQparams = "quantized_decomposed::choose_qparams.tensor";
constexpr const char* kQuantizeTensor = "quantized_decomposed::quantize_per_tensor.tensor";
constexpr const char* kDequantizeTensor = "quantized_decomposed::dequantize_per_tensor.tensor";


// Argument positions: (input, weight, weight_scales, group_size, bits, bias).
constexpr size_t kInput = 0, kWeight = 1, kScales = 2, kGroup = 3, kBits = 4, kBias = 5;


// Why linear_weight_only node n cannot run as XNNPACK's qd8 fully connected ("" when it can).
std::string linear_weight_only_reason(const Graph& g, const Node& n) {
  if (n.args.size() != 6 || n.args[kGroup].kind != Arg::Kind::Int || n.args[kBits].kind != Arg::Kind::Int) {
    return "unexpected arguments";
  }
  if (n.output_values().size() != 1) return "not a single-output op";
  const Value* x = tensor_arg(g, n, kInput);
  const Value& out = g.values[n.output_values()[0]];
  const Value* w = tensor_arg(g, n, kWeight);
  const Value* scales = tensor_arg(g, n, kScales);
  const Value* bias = tensor_arg(g, n, kBias);
  const int64_t group = n.args[kGroup].i, bits = n.args[kBits].i;
  if (x == nullptr || x->type != ValueType::Tensor || x->dtype != ScalarType::Float32 || x->sizes.empty() ||
      is_const(x)) {
    return "input is not a float32 activation";
  }
  // Bounded dynamic batch / sequence dims reshape at run time; the reduced dim may not change.
  if (x->is_dynamic() && (x->dynamic_dims.size() != x->sizes.size() || x->dynamic_dims.back())) {
    return "the input's last dim is dynamic";
  }
  if (out.type != ValueType::Tensor || out.dtype != ScalarType::Float32) return "output is not float32";
  if (!is_const(w) || !is_const(scales) || scales->dtype != ScalarType::Float32 || scales->sizes.size() != 2) {
    return "weights or scales are not constants of the expected types";
  }
  const int64_t rows = scales->sizes[0], cols = x->sizes.back();
  if (n.args[kBias].kind != Arg::Kind::None &&
      (!is_const(bias) || bias->dtype != ScalarType::Float32 || bias->sizes != std::vector<int64_t>{rows})) {
    return "bias is not a constant float32 [out features]";
  }
  const float* s = float_data(g, scales);
  const int64_t count = scales->sizes[0] * scales->sizes[1];
  if (bits == 8) {
    if (w->dtype != ScalarType::Int8 || w->sizes != std::vector<int64_t>{rows, cols}) {
      return "weight is not int8 [N, K]";
    }
    if (group != cols || scales->sizes[1] != 1) {
      return "int8 weights in groups (XNNPACK's qc8w takes one scale per output channel)";
    }
    for (int64_t i = 0; i < count; ++i) {
      if (!std::isnormal(s[i]) || s[i] < 0) return "a weight scale is not a positive normal float";
    }
    return "";
  }
  if (bits != 4) return "bits is neither 8 nor 4";
  if (w->dtype != ScalarType::UInt8 || cols % 2 != 0 || w->sizes != std::vector<int64_t>{rows, cols / 2}) {
    return "weight is not packed int4 uint8 [N, K / 2]";
  }
  if (group < 32 || group % 32 != 0 || cols % group != 0 || scales->sizes[1] != cols / group) {
    return "int4 group size is not a multiple of 32 dividing K (XNNPACK's qb4w blocks)";
  }
  for (int64_t i = 0; i < count; ++i) {
    const float b = bf16_to_float(float_to_bf16(s[i]));
    if (!std::isfinite(s[i]) || !std::isnormal(b) || b < 0) return "a weight scale is not a positive bfloat16 number";
  }
  return "";
}

}  // namespace

bool dynamic_activation_chain(const Graph& g, const Node& n, DynamicChain* chain) {
  // Any member leads to choose_qparams: it is the producer of a q / dq node's scale.
  int c = -1;
  const std::string k = key(n);
  if (k == kChooseQparams) {
    c = int(&n - g.nodes.data());
  } else if ((k == kQuantizeTensor || k == kDequantizeTensor) && n.args.size() >= 3 &&
             n.args[1].kind == Arg::Kind::Tensor && n.args[1].ref >= 0) {
    c = g.values[n.args[1].ref].producer;
  }
  if (c < 0 || g.nodes[c].erased || key(g.nodes[c]) != kChooseQparams) return false;
  const Node& cn = g.nodes[c];
  // (input, quant_min, quant_max, eps, dtype) -> (scale, zero_point), int8 over [-128, 127].
  if (cn.args.size() != 5 || cn.output_values().size() != 2 || cn.args[0].kind != Arg::Kind::Tensor ||
      cn.args[1].kind != Arg::Kind::Int || cn.args[1].i != -128 || cn.args[2].kind != Arg::Kind::Int ||
      cn.args[2].i != 127 || cn.args[4].kind != Arg::Kind::Int || cn.args[4].i != int64_t(ScalarType::Int8)) {
    return false;
  }
  const int x = cn.args[0].ref, scale = cn.output_values()[0], zero_point = cn.output_values()[1];
  const std::vector<std::vector<int>> readers = g.value_readers();
  // The scale and zero point feed exactly one quantize and one dequantize.
  int q = -1, dq = -1;
  for (int v : {scale, zero_point}) {
    if (readers[v].size() != 2) return false;
    for (int r : readers[v]) {
      const std::string rk = key(g.nodes[r]);
      if (rk == kQuantizeTensor && (q < 0 || q == r)) q = r;
      else if (rk == kDequantizeTensor && (dq < 0 || dq == r)) dq = r;
      else return false;
    }
  }
  if (q < 0 || dq < 0) return false;
  auto same_params = [&](const Node& m, int first) {  // (first, scale, zero_point, -128, 127, int8, ...)
    return m.args.size() >= 6 && m.args[0].kind == Arg::Kind::Tensor && m.args[0].ref == first &&
           m.args[1].ref == scale && m.args[2].ref == zero_point && m.args[3].kind == Arg::Kind::Int &&
           m.args[3].i == -128 && m.args[4].kind == Arg::Kind::Int && m.args[4].i == 127 &&
           m.args[5].kind == Arg::Kind::Int && m.args[5].i == int64_t(ScalarType::Int8) &&
           m.output_values().size() == 1;
  };
  const Node& qn = g.nodes[q];
  const Node& dqn = g.nodes[dq];
  if (!same_params(qn, x)) return false;
  const int q_out = qn.output_values()[0];
  if (!same_params(dqn, q_out) || readers[q_out].size() != 1) return false;
  if (dqn.args.size() > 6 && dqn.args[6].kind != Arg::Kind::None &&
      !(dqn.args[6].kind == Arg::Kind::Int && dqn.args[6].i == int64_t(ScalarType::Float32))) {
    return false;
  }
  // Every reader of the dequantized activation is a weight-only linear layer XNNPACK runs: it
  // quantizes the activation itself (per row).
  const int dq_out = dqn.output_values()[0];
  if (readers[dq_out].empty()) return false;
  for (int r : readers[dq_out]) {
    const Node& l = g.nodes[r];
    if (key(l) != kLinearWeightOnly || l.args.empty() || l.args[0].kind != Arg::Kind::Tensor ||
        l.args[0].ref != dq_out || !linear_weight_only_reason(g, l).empty()) {
      return false;
    }
  }
  chain->choose = c;
  chain->quantize = q;
  chain->dequantize = dq;
  return true;
}

bool fold_dynamic_activation(XnnLowering& ctx, const Node& n, std::string* error) {
  DynamicChain chain;
  if (!dynamic_activation_chain(ctx.g, n, &chain)) return false;
  // choose_qparams' scale and zero point are read by the quantize / dequantize only: nothing to emit.
  if (&n - ctx.g.nodes.data() == chain.choose) return true;
  auto it = ctx.id.find(n.args[0].ref);
  if (it == ctx.id.end()) {
    *error = "xnnpack preprocess: dynamic quantization input not mapped";
    return true;
  }
  ctx.id[n.output_values()[0]] = it->second;
  return true;
}

namespace {

// Convert (activations to qd8, per row) + FullyConnected (qc8w / qb4w weights, float bias).
std::string lower_linear_weight_only(XnnLowering& ctx, const Node& n) {
  const Graph& g = ctx.g;
  XnnBlobBuilder& b = *ctx.b;
  exporter::ConstantSlots& slots = *ctx.slots;
  auto it = ctx.id.find(n.args[kInput].ref);
  if (it == ctx.id.end()) return "xnnpack preprocess: " + n.name + " input not mapped";
  const Value* w = tensor_arg(g, n, kWeight);
  const Value* scales = tensor_arg(g, n, kScales);
  const Value* bias = tensor_arg(g, n, kBias);
  const size_t rows = size_t(scales->sizes[0]), cols = size_t(g.values[n.args[kInput].ref].sizes.back());
  const uint32_t activations = b.node(fb::OpType::Convert, {it->second});
  b.set_qdint8(activations);
  XnnQuant wq;
  uint32_t filter = kInvalidId;
  if (n.args[kBits].i == 8) {
    wq.scales_slot = int32_t(slots.existing(scales->constant));  // [N, 1] float32: one per row
    slots.read_at_init(uint32_t(wq.scales_slot));  // the runtime validates every scale
    filter = b.quantized_constant_in_slot(fb::DataType::QCInt8, {rows, cols}, std::move(wq),
                                          int32_t(slots.existing(w->constant)));
  } else {
    const float* s = float_data(g, scales);
    const size_t count = size_t(scales->sizes[0] * scales->sizes[1]);
    std::vector<uint8_t> bf16(count * sizeof(uint16_t));
    for (size_t i = 0; i < count; ++i) {
      const uint16_t v = float_to_bf16(s[i]);
      std::memcpy(bf16.data() + i * sizeof v, &v, sizeof v);
    }
    const exporter::Constant& c = g.constants[scales->constant];
    wq.scales_slot = int32_t(slots.add(scales->constant, c.name + ".bf16", ScalarType::BFloat16,
                                       {scales->sizes[0], scales->sizes[1]}, std::move(bf16)));
    slots.read_at_init(uint32_t(wq.scales_slot));  // the runtime (and XNNPACK) validate every scale
    wq.zero_point = 8;
    wq.block_size = uint32_t(n.args[kGroup].i);
    filter = b.quantized_constant_in_slot(fb::DataType::QBInt4, {rows, cols}, std::move(wq),
                                          int32_t(slots.existing(w->constant)));
  }
  std::vector<uint32_t> ins = {activations, filter};
  if (is_const(bias)) ins.push_back(b.constant_in_slot({rows}, int32_t(slots.existing(bias->constant))));
  ctx.result = b.node(fb::OpType::FullyConnected, ins);
  return "";
}

std::string check_linear_weight_only(const XnnLowering& ctx, const Node& n) { return linear_weight_only_reason(ctx.g, n); }

std::string check_dynamic_chain_member(const XnnLowering& ctx, const Node& n) {
  DynamicChain chain;
  return dynamic_activation_chain(ctx.g, n, &chain)
             ? ""
             : "not a dynamic int8 activation quantization (choose_qparams -> quantize -> dequantize, int8) read "
               "only by weight-only linear layers XNNPACK runs";
}

// The dynamic activation quantization is folded (fold_dynamic_activation) before lowering.
std::string lower_unfolded_chain(XnnLowering&, const Node& n) {
  return "xnnpack preprocess: " + n.name + " is lowered only as part of a weight-only linear layer's input";
}

}  // namespace

void add_weight_only_ops(XnnOpTable& t) {
  XnnOpTraits quantized;  // int8 tensors keep the layout they are made in
  quantized.quantized = true;
  t.add({kLinearWeightOnly}, check_linear_weight_only, lower_linear_weight_only, quantized);
  t.add({kChooseQparams, kQuantizeTensor, kDequantizeTensor}, check_dynamic_chain_member, lower_unfolded_chain,
        quantized);
}

}  // namespace xnnpack
}  // namespace ember
