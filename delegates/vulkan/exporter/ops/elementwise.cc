// Vulkan op table, elementwise family: add / sub / mul / div (tensor or scalar operand: a
// scalar becomes an affine unary op, no tensor for it), the unary math ops and activations.
#include <cmath>

#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

// x + alpha * y, or x + alpha * s for a numeric second operand (an affine op).
std::string lower_add_sub(VulkanLowering& ctx, const Node& n) {
  const std::string k = n.kernel_name();
  double d1 = 0, d2 = 0;
  if (has_arg(n, 1) && number(n.args[1], &d1)) {
    if (has_arg(n, 2) && !number(n.args[2], &d2)) return "non-numeric alpha";
    const double alpha = has_arg(n, 2) ? d2 : 1.0;
    const double shift = (k == "aten::sub.Tensor" || k == "aten::sub.Scalar" ? -1.0 : 1.0) * alpha * d1;
    return ctx.finish(n, ctx.b.unary(VkUnary::Affine, ctx.t(n, 0), 1.0f, static_cast<float>(shift)));
  }
  if (k != "aten::add.Tensor" && k != "aten::sub.Tensor") return no_shader(n);  // a Scalar op with no number
  if (!has_arg(n, 2) || !number(n.args[2], &d1)) return "non-numeric alpha";
  return ctx.finish(n, ctx.b.binary(k == "aten::add.Tensor" ? VkBinary::Add : VkBinary::Sub, ctx.t(n, 0), ctx.t(n, 1),
                                    static_cast<float>(d1)));
}

// x * y, x / y, or x * s, x / s for a numeric second operand (an affine op).
std::string lower_mul_div(VulkanLowering& ctx, const Node& n) {
  const std::string k = n.kernel_name();
  double d1 = 0;
  if (has_arg(n, 1) && number(n.args[1], &d1)) {
    const bool div = k == "aten::div.Tensor" || k == "aten::div.Scalar";
    if (div && d1 == 0.0) return "division by a zero scalar";
    return ctx.finish(n, ctx.b.unary(VkUnary::Affine, ctx.t(n, 0), static_cast<float>(div ? 1.0 / d1 : d1), 0.0f));
  }
  if (k != "aten::mul.Tensor" && k != "aten::div.Tensor") return no_shader(n);  // a Scalar op with no number
  return ctx.finish(n, ctx.b.binary(k == "aten::mul.Tensor" ? VkBinary::Mul : VkBinary::Div, ctx.t(n, 0), ctx.t(n, 1)));
}

std::string lower_neg(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.unary(VkUnary::Affine, ctx.t(n, 0), -1.0f, 0.0f));
}

// A unary op without parameters.
template <VkUnary kOp>
std::string lower_unary(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.unary(kOp, ctx.t(n, 0)));
}

std::string lower_pow(VulkanLowering& ctx, const Node& n) {
  double d1 = 0;
  if (!has_arg(n, 1) || !number(n.args[1], &d1)) return "non-numeric exponent";
  return ctx.finish(n, ctx.b.unary(VkUnary::Pow, ctx.t(n, 0), static_cast<float>(d1), 0.0f));
}

std::string lower_relu6(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.unary(VkUnary::Clamp, ctx.t(n, 0), 0.0f, 6.0f));
}

std::string lower_hardtanh(VulkanLowering& ctx, const Node& n) {
  double d1 = 0, d2 = 0;
  if (!has_arg(n, 2) || !number(n.args[1], &d1) || !number(n.args[2], &d2)) return "non-numeric bounds";
  return ctx.finish(n, ctx.b.unary(VkUnary::Hardtanh, ctx.t(n, 0), static_cast<float>(d1), static_cast<float>(d2)));
}

std::string lower_clamp(VulkanLowering& ctx, const Node& n) {
  double d1 = 0, d2 = 0;
  float lo = -INFINITY, hi = INFINITY;
  if (has_arg(n, 1) && n.args[1].kind != Arg::Kind::None) {
    if (!number(n.args[1], &d1)) return "clamp min";
    lo = static_cast<float>(d1);
  }
  if (has_arg(n, 2) && n.args[2].kind != Arg::Kind::None) {
    if (!number(n.args[2], &d2)) return "clamp max";
    hi = static_cast<float>(d2);
  }
  return ctx.finish(n, ctx.b.unary(VkUnary::Clamp, ctx.t(n, 0), lo, hi));
}

std::string lower_gelu(VulkanLowering& ctx, const Node& n) {
  const bool tanh_approx = has_arg(n, 1) && n.args[1].kind == Arg::Kind::String && n.args[1].s == "tanh";
  return ctx.finish(n, ctx.b.unary(tanh_approx ? VkUnary::GeluTanh : VkUnary::Gelu, ctx.t(n, 0)));
}

}  // namespace

void add_elementwise_ops(VulkanOpTable& t) {
  t.add({"aten::add.Tensor", "aten::sub.Tensor", "aten::add.Scalar", "aten::sub.Scalar"}, nullptr, lower_add_sub);
  t.add({"aten::mul.Tensor", "aten::div.Tensor", "aten::mul.Scalar", "aten::div.Scalar"}, nullptr, lower_mul_div);
  t.add({"aten::neg.default"}, nullptr, lower_neg);
  t.add({"aten::rsqrt.default"}, nullptr, lower_unary<VkUnary::Rsqrt>);
  t.add({"aten::sqrt.default"}, nullptr, lower_unary<VkUnary::Sqrt>);
  t.add({"aten::exp.default"}, nullptr, lower_unary<VkUnary::Exp>);
  t.add({"aten::pow.Tensor_Scalar"}, nullptr, lower_pow);
  t.add({"aten::relu.default"}, nullptr, lower_unary<VkUnary::Relu>);
  t.add({"aten::relu6.default"}, nullptr, lower_relu6);
  t.add({"aten::hardtanh.default"}, nullptr, lower_hardtanh);
  t.add({"aten::clamp.default"}, nullptr, lower_clamp);
  t.add({"aten::hardswish.default"}, nullptr, lower_unary<VkUnary::Hardswish>);
  t.add({"aten::hardsigmoid.default"}, nullptr, lower_unary<VkUnary::Hardsigmoid>);
  t.add({"aten::sigmoid.default"}, nullptr, lower_unary<VkUnary::Sigmoid>);
  t.add({"aten::silu.default"}, nullptr, lower_unary<VkUnary::Silu>);
  t.add({"aten::tanh.default"}, nullptr, lower_unary<VkUnary::Tanh>);
  t.add({"aten::gelu.default"}, nullptr, lower_gelu);
}

}  // namespace vulkan
}  // namespace ember
