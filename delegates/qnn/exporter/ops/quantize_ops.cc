// quantize / dequantize at the boundaries and between float ops: the HTP graph's own
// Quantize / Dequantize where a float tensor enters or leaves, aliases (no op) where the value
// already has that quantized form inside the graph, Convert where the grid changes.
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Node;

std::string check_quantize(const QnnLowering& ctx, const Node& n) {
  if (ctx.float_graph) return "fp16 graph: quantized ops stay out";
  const int in = ctx.arg_value(n, 0), out = ctx.out_value(n);
  if (in < 0 || out < 0) return "not a tensor quantize";
  if (ctx.g.values[in].is_dynamic()) return "dynamic shape";
  if (ctx.g.values[in].dtype != ScalarType::Float32) return "input is not float32";
  if (!ctx.quant.rep(out).valid) return "not a full-range per-tensor int8/uint8 quantization";
  return "";
}

std::string lower_quantize(QnnLowering& ctx, const Node& n) {
  const int in = ctx.arg_value(n, 0), out = ctx.out_value(n);
  const QRep& from = ctx.quant.rep(in);
  if (from.valid && from == ctx.quant.rep(out)) {
    ctx.alias(out, in);
    return "";
  }
  const Layout layout = ctx.current_layout(in);
  const int x = ctx.input(in, layout);
  // A float tensor: quantize; a tensor on another grid: requantize.
  ctx.b->add_node(from.valid ? "Convert" : "Quantize", {x}, {ctx.output(out, layout)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_dequantize(const QnnLowering& ctx, const Node& n) {
  if (ctx.float_graph) return "fp16 graph: quantized ops stay out";
  const int in = ctx.arg_value(n, 0), out = ctx.out_value(n);
  if (in < 0 || out < 0) return "not a tensor dequantize";
  if (ctx.g.values[in].is_dynamic()) return "dynamic shape";
  const QRep& r = ctx.quant.rep(out);
  if (!r.valid) return "not a full-range per-tensor int8/uint8 dequantization";
  const QRep& producer = ctx.quant.rep(in);
  if (producer.valid && !(producer == r)) return "dequantizes with other parameters than its input's";
  if (ctx.g.values[in].role == exporter::ValueRole::Constant) {
    // The HTP computes LayerNorm with a 16-bit weight wrongly (its output halved, measured on
    // the simulator at v73): weights go in as 8-bit only, as in a16w8.
    if (r.dtype == ScalarType::Int16) return "16-bit constant (weights must be 8-bit: quantize them to int8)";
    // A quantized weight goes into the graph as a static tensor only for ops that take one
    // (LayerNorm's gamma / beta); others would read it as an activation.
    for (int r : ctx.quant.readers(out)) {
      if (ctx.g.nodes[static_cast<size_t>(r)].kernel_name() != "aten::layer_norm.default") {
        return "constant operand (a weight of a float op)";
      }
    }
  }
  return "";
}

std::string lower_dequantize(QnnLowering& ctx, const Node& n) {
  ctx.alias(ctx.out_value(n), ctx.arg_value(n, 0));
  return ctx.b->ok() ? "" : ctx.b->error();
}

// A per-channel int8 weight's dequantize (reference-form layers on 16-bit activations): the layer
// reads the constant itself as its static weight, so the node lowers to nothing.
std::string check_dequantize_per_channel(const QnnLowering& ctx, const Node& n) {
  if (ctx.float_graph) return "fp16 graph: quantized ops stay out";
  const exporter::Value* w = ctx.arg(n, 0);
  const int out = ctx.out_value(n);
  if (w == nullptr || out < 0 || w->role != exporter::ValueRole::Constant || w->dtype != ScalarType::Int8) {
    return "not the dequantize of a constant int8 weight";
  }
  if (ctx.quant.readers(out).empty()) return "unread";
  for (int r : ctx.quant.readers(out)) {
    const std::string k = ctx.g.nodes[static_cast<size_t>(r)].kernel_name();
    if (k != "aten::conv2d.default" && k != "aten::linear.default") return "a weight of something else than a layer";
  }
  return "";
}

std::string lower_nothing(QnnLowering&, const Node&) { return ""; }

}  // namespace

void add_quantize_ops(QnnOpTable& table) {
  table.add({kQuantizeOp}, check_quantize, lower_quantize);
  table.add({kDequantizeOp}, check_dequantize, lower_dequantize);
  table.add({kDequantizePerChannelOp}, check_dequantize_per_channel, lower_nothing);
}

}  // namespace qnn
}  // namespace ember
