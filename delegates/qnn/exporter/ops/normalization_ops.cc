// LayerNorm over the trailing dims of a quantized activation, its weight and bias the
// quantized constants PT2E leaves (dequantized int8), as static tensors of the graph.
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Node;

// aten::layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable)
std::string check_layer_norm(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const exporter::Value* x = ctx.arg(n, 0);
  if (x == nullptr) return "input not a tensor";
  const std::vector<int64_t> shape = int_list(n, 1, 1, 0);
  if (shape.empty() || shape.size() > x->sizes.size()) return "normalized_shape of another rank";
  if (ctx.arg(n, 2) == nullptr || ctx.arg(n, 3) == nullptr) return "no weight or no bias";
  return "";
}

std::string lower_layer_norm(QnnLowering& ctx, const Node& n) {
  const int xv = ctx.arg_value(n, 0);
  const uint32_t rank = static_cast<uint32_t>(ctx.g.values[xv].sizes.size());
  const uint32_t count = static_cast<uint32_t>(int_list(n, 1, 1, 0).size());
  std::vector<uint32_t> axes;
  for (uint32_t d = rank - count; d < rank; ++d) axes.push_back(d);
  const int x = ctx.input(xv, Layout::Ember);
  const int gamma = ctx.input(ctx.arg_value(n, 2), Layout::Ember);
  const int beta = ctx.input(ctx.arg_value(n, 3), Layout::Ember);
  ctx.b->add_node("LayerNorm", {x, gamma, beta}, {ctx.output(ctx.out_value(n), Layout::Ember)},
                  {scalar_f32("epsilon", static_cast<float>(number_arg(n, 4, 1e-5))), tensor_u32("axes", axes)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_normalization_ops(QnnOpTable& table) {
  table.add({"aten::layer_norm.default"}, check_layer_norm, lower_layer_norm);
}

}  // namespace qnn
}  // namespace ember
