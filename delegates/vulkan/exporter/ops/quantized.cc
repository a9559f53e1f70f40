// Vulkan op table, weight-only quantized layers (exporter/passes/lower_weight_only.cc's ops;
// semantics in kernels/portable/quantized/weight_only_ops.cc): linear_weight_only and
// embedding_weight_only with int8 or packed int4 weights, dequantized in the shader
// (linear_wq.comp, embedding_wq.comp), so a decoded token reads 1 or 0.5 byte per weight.
#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

// (input, weight, weight_scales, group_size, bits, bias?)
std::string lower_linear_weight_only(VulkanLowering& ctx, const Node& n) {
  int64_t group = 0, bits = 0;
  if (!has_arg(n, 4) || !static_int(n.args[3], &group) || !static_int(n.args[4], &bits)) return "weight-only linear params";
  const int bias = has_arg(n, 5) ? ctx.t(n, 5) : -1;
  if (bias == -2) return "unmapped input";
  return ctx.finish(n, ctx.b.linear_weight_only(ctx.t(n, 0), ctx.t(n, 1), ctx.t(n, 2), bias, static_cast<int>(bits),
                                                static_cast<int>(group)));
}

// (weight, weight_scales, group_size, bits, indices)
std::string lower_embedding_weight_only(VulkanLowering& ctx, const Node& n) {
  int64_t group = 0, bits = 0;
  if (!has_arg(n, 4) || !static_int(n.args[2], &group) || !static_int(n.args[3], &bits)) return "weight-only embedding params";
  return ctx.finish(n, ctx.b.embedding_weight_only(ctx.t(n, 0), ctx.t(n, 1), ctx.t(n, 4), static_cast<int>(bits),
                                                   static_cast<int>(group)));
}

}  // namespace

void add_quantized_ops(VulkanOpTable& t) {
  VulkanOpTraits weights;
  weights.quantized_weights = true;
  t.add({"ember_quantized::linear_weight_only.default"}, nullptr, lower_linear_weight_only, weights);
  VulkanOpTraits rows = weights;
  rows.takes_indices = true;
  t.add({"ember_quantized::embedding_weight_only.default"}, nullptr, lower_embedding_weight_only, rows);
}

}  // namespace vulkan
}  // namespace ember
