// Vulkan op table, normalisation and reduction family: softmax / log_softmax, layer_norm, mean.
#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

std::string lower_softmax(VulkanLowering& ctx, const Node& n) {
  const std::string k = n.kernel_name();
  int64_t dim = 0;
  if (!has_arg(n, 1) || !static_int(n.args[1], &dim)) return "softmax dim";
  if (k != "aten::softmax.int" && has_arg(n, 2) && n.args[2].b) return "half_to_float";
  if (k == "aten::softmax.int" && has_arg(n, 2) && n.args[2].kind != Arg::Kind::None) return "softmax dtype";
  return ctx.finish(n, ctx.b.softmax(ctx.t(n, 0), static_cast<int32_t>(dim), k == "aten::_log_softmax.default"));
}

std::string lower_layer_norm(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> shape;
  double eps = 0;
  if (!has_arg(n, 4) || !static_ints(n.args[1], &shape) || !number(n.args[4], &eps)) return "layer_norm params";
  return ctx.finish(n, ctx.b.layer_norm(ctx.t(n, 0), ctx.t(n, 2), ctx.t(n, 3), static_cast<int32_t>(shape.size()),
                                        static_cast<float>(eps)));
}

std::string lower_mean(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> dims;
  if (!has_arg(n, 3) || n.args[3].kind != Arg::Kind::None) return "mean dtype";
  if (n.args[1].kind != Arg::Kind::None && !static_ints(n.args[1], &dims)) return "mean dims";
  return ctx.finish(n, ctx.b.mean(ctx.t(n, 0), dims, n.args[2].b));
}

}  // namespace

void add_normalization_ops(VulkanOpTable& t) {
  t.add({"aten::_softmax.default", "aten::_log_softmax.default", "aten::softmax.int"}, nullptr, lower_softmax);
  t.add({"aten::layer_norm.default"}, nullptr, lower_layer_norm);
  t.add({"aten::mean.dim"}, nullptr, lower_mean);
}

}  // namespace vulkan
}  // namespace ember
