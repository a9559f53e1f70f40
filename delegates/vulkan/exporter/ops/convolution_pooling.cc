// Vulkan op table, convolution and pooling family: 2-D convolution (not transposed), max /
// average / adaptive average pooling. Windows must be static.
#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

std::string lower_conv2d(VulkanLowering& ctx, const Node& n) {
  const bool conv = n.kernel_name() == "aten::convolution.default";
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 0;
  if (!has_arg(n, conv ? 8 : 6) || !static_ints(n.args[3], &stride) || !static_ints(n.args[4], &padding) ||
      !static_ints(n.args[5], &dilation))
    return "non-static conv params";
  if (conv && (n.args[6].kind != Arg::Kind::Bool || n.args[6].b)) return "transposed convolution";
  if (!static_int(n.args[conv ? 8 : 6], &groups)) return "non-static groups";
  const int x = ctx.t(n, 0);
  if (x < 0 || ctx.b.sizes(x).size() != 4) return "conv input is not 4-D";
  return ctx.finish(n, ctx.b.conv2d(x, ctx.t(n, 1), ctx.t(n, 2), i32(stride), i32(padding), i32(dilation),
                                    static_cast<int>(groups)));
}

std::string lower_max_pool2d(VulkanLowering& ctx, const Node& n) {
  const bool ceil = has_arg(n, 5) && n.args[5].kind == Arg::Kind::Bool && n.args[5].b;
  std::vector<int64_t> kernel, stride, padding, dilation;
  if (!has_arg(n, 5) || !static_ints(n.args[1], &kernel) || !static_ints(n.args[2], &stride) ||
      !static_ints(n.args[3], &padding) || !static_ints(n.args[4], &dilation))
    return "non-static pool params";
  return ctx.finish(n, ctx.b.max_pool2d(ctx.t(n, 0), i32(kernel), i32(stride), i32(padding), i32(dilation), ceil));
}

std::string lower_avg_pool2d(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> kernel, stride, padding;
  if (!has_arg(n, 6) || !static_ints(n.args[1], &kernel) || !static_ints(n.args[2], &stride) ||
      !static_ints(n.args[3], &padding))
    return "non-static pool params";
  int64_t div = 0;
  if (n.args[6].kind != Arg::Kind::None && !static_int(n.args[6], &div)) return "divisor_override";
  return ctx.finish(n, ctx.b.avg_pool2d(ctx.t(n, 0), i32(kernel), i32(stride), i32(padding), n.args[4].b, n.args[5].b,
                                        static_cast<int32_t>(div)));
}

std::string lower_adaptive_avg_pool2d(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> size;
  if (!has_arg(n, 1) || !static_ints(n.args[1], &size) || size.size() != 2) return "output_size";
  return ctx.finish(n, ctx.b.adaptive_avg_pool2d(ctx.t(n, 0), size[0], size[1]));
}

}  // namespace

void add_convolution_pooling_ops(VulkanOpTable& t) {
  t.add({"aten::convolution.default", "aten::conv2d.default"}, nullptr, lower_conv2d);
  t.add({"aten::max_pool2d.default"}, nullptr, lower_max_pool2d);
  t.add({"aten::avg_pool2d.default"}, nullptr, lower_avg_pool2d);
  t.add({"aten::adaptive_avg_pool2d.default", "aten::_adaptive_avg_pool2d.default"}, nullptr,
        lower_adaptive_avg_pool2d);
}

}  // namespace vulkan
}  // namespace ember
