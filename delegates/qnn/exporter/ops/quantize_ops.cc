// quantize / dequantize at the boundaries and between float ops: the HTP graph's own
// Quantize / Dequantize where a float tensor enters or leaves, aliases (no op) where the value
// already has that quantized form inside the graph, Convert where the grid changes.
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Node;

// Whether `v` is read, and only by nodes of `kernels`.
bool all_readers_are(const QnnLowering& ctx, int v, std::initializer_list<const char*> kernels) {
  if (v < 0 || ctx.quant.readers(v).empty()) return false;
  for (int r : ctx.quant.readers(v)) {
    const std::string k = ctx.g.nodes[static_cast<size_t>(r)].kernel_name();
    bool found = false;
    for (const char* want : kernels) found = found || k == want;
    if (!found) return false;
  }
  return true;
}

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
    if (!ctx.quant.readers(out).empty() && !all_readers_are(ctx, out, {"aten::layer_norm.default"})) {
      return "constant operand (a weight of a float op)";
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
  return all_readers_are(ctx, out, {"aten::conv2d.default", "aten::linear.default"})
             ? ""
             : "a weight of something else than a layer";
}

std::string lower_nothing(QnnLowering&, const Node&) { return ""; }

// PT2E's dynamic quantization of a layer's input (choose_qparams.tensor -> quantize_per_tensor.tensor
// -> dequantize_per_tensor.tensor, scale and zero point computed per call) has no HTP form; in an
// fp16 graph it is an identity: the layer computes in fp16, closer to the float model than int8
// activations would be.
constexpr const char* kChooseQparamsOp = "quantized_decomposed::choose_qparams.tensor";
constexpr const char* kQuantizeTensorOp = "quantized_decomposed::quantize_per_tensor.tensor";
constexpr const char* kDequantizeTensorOp = "quantized_decomposed::dequantize_per_tensor.tensor";


std::string check_dynamic_qdq(const QnnLowering& ctx, const Node& n) {
  if (!ctx.float_graph) return "dynamic quantization maps to fp16 graphs only (qnn.precision=fp16)";
  const exporter::Value* x = ctx.arg(n, 0);
  if (x == nullptr || x->is_dynamic()) return "not a static tensor";
  const std::string k = n.kernel_name();
  if (k == kChooseQparamsOp) {
    if (x->dtype != ScalarType::Float32) return "not a float input";
    for (int v : n.output_values()) {
      if (!all_readers_are(ctx, v, {kQuantizeTensorOp, kDequantizeTensorOp})) return "its parameters go elsewhere";
    }
    return "";
  }
  const int out = ctx.out_value(n);
  if (out < 0) return "not a single-tensor op";
  if (k == kQuantizeTensorOp) {
    if (x->dtype != ScalarType::Float32) return "not a float input";
    return all_readers_are(ctx, out, {kDequantizeTensorOp}) ? "" : "the integer tensor is read by something else";
  }
  const int p = x->producer;  // dequantize_per_tensor.tensor
  if (p < 0 || ctx.g.nodes[static_cast<size_t>(p)].kernel_name() != kQuantizeTensorOp) return "not after a dynamic quantize";
  return ctx.g.values[static_cast<size_t>(out)].dtype == ScalarType::Float32 ? "" : "not a float output";
}

std::string lower_dynamic_qdq(QnnLowering& ctx, const Node& n) {
  if (n.kernel_name() == kChooseQparamsOp) return "";
  ctx.alias(ctx.out_value(n), ctx.arg_value(n, 0));
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_quantize_ops(QnnOpTable& table) {
  table.add({kQuantizeOp}, check_quantize, lower_quantize);
  table.add({kDequantizeOp}, check_dequantize, lower_dequantize);
  table.add({kDequantizePerChannelOp}, check_dequantize_per_channel, lower_nothing);
  table.add({kChooseQparamsOp, kQuantizeTensorOp, kDequantizeTensorOp}, check_dynamic_qdq, lower_dynamic_qdq);
}

}  // namespace qnn
}  // namespace ember
