// Elementwise arithmetic and activations on quantized activations: ElementWiseAdd / Subtract /
// Multiply / Divide (same-rank operands; the layout of whichever is already NHWC), Relu, ReluMinMax
// (hardtanh, relu6), Sigmoid, Tanh, HardSwish, Gelu, Softmax.
#include "delegates/qnn/exporter/qnn_lowering.h"

#include <algorithm>
#include <map>

namespace ember {
namespace qnn {
namespace {

using exporter::Arg;
using exporter::Node;

const std::map<std::string, const char*>& binary_types() {
  static const std::map<std::string, const char*> m = {
      {"aten::add.Tensor", "ElementWiseAdd"},
      {"aten::sub.Tensor", "ElementWiseSubtract"},
      {"aten::mul.Tensor", "ElementWiseMultiply"},
      {"aten::div.Tensor", "ElementWiseDivide"},
  };
  return m;
}
const std::map<std::string, const char*>& unary_types() {
  static const std::map<std::string, const char*> m = {
      {"aten::relu.default", "Relu"},           {"aten::relu_.default", "Relu"},
      {"aten::sigmoid.default", "Sigmoid"},     {"aten::tanh.default", "Tanh"},
      {"aten::hardswish.default", "HardSwish"}, {"aten::gelu.default", "Gelu"},
      {"aten::hardtanh.default", "ReluMinMax"}, {"aten::relu6.default", "ReluMinMax"},
  };
  return m;
}

std::string check_binary(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const exporter::Value *a = ctx.arg(n, 0), *b = ctx.arg(n, 1);
  if (a == nullptr || b == nullptr) return "scalar operand";
  if (a->sizes.size() != b->sizes.size()) return "operands of different rank";
  const bool has_alpha = n.kernel_name() == "aten::add.Tensor" || n.kernel_name() == "aten::sub.Tensor";
  if (has_alpha && number_arg(n, 2, 1.0) != 1.0) return "alpha != 1";
  return "";
}

std::string lower_binary(QnnLowering& ctx, const Node& n) {
  const int a = ctx.arg_value(n, 0), b = ctx.arg_value(n, 1);
  const Layout layout = ctx.current_layout(a) == Layout::Nhwc || ctx.current_layout(b) == Layout::Nhwc ? Layout::Nhwc
                                                                                                         : Layout::Ember;
  const int ta = ctx.input(a, layout), tb = ctx.input(b, layout);
  ctx.b->add_node(binary_types().at(n.kernel_name()), {ta, tb}, {ctx.output(ctx.out_value(n), layout)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_unary(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  if (n.kernel_name() == "aten::gelu.default" && n.args.size() > 1 && n.args[1].kind == Arg::Kind::String &&
      n.args[1].s != "none") {
    return "tanh-approximated gelu";
  }
  return "";
}

std::string lower_unary(QnnLowering& ctx, const Node& n) {
  const std::string k = n.kernel_name();
  const int x = ctx.arg_value(n, 0);
  const Layout layout = ctx.current_layout(x);
  std::vector<ParamSpec> params;
  const char* type = unary_types().at(k);
  if (k == "aten::hardtanh.default" || k == "aten::relu6.default") {
    double lo = 0, hi = 6;
    if (k == "aten::hardtanh.default") lo = number_arg(n, 1, -1), hi = number_arg(n, 2, 1);
    type = clamp_op(ctx.quant.rep(ctx.out_value(n)), &lo, &hi);
    if (type == nullptr) type = "Convert";  // the bounds cover the grid: only a requantize is left
    if (std::string(type) == "ReluMinMax") params = {scalar_f32("min_value", float(lo)), scalar_f32("max_value", float(hi))};
  }
  const int in = ctx.input(x, layout);
  ctx.b->add_node(type, {in}, {ctx.output(ctx.out_value(n), layout)}, params);
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_softmax(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  if (bool_arg(n, 2, false)) return "half_to_float";
  return "";
}

std::string lower_softmax(QnnLowering& ctx, const Node& n) {
  const int x = ctx.arg_value(n, 0);
  const int64_t rank = static_cast<int64_t>(ctx.g.values[x].sizes.size());
  int64_t dim = static_cast<int64_t>(number_arg(n, 1, -1));
  if (dim < 0) dim += rank;
  const Layout layout = rank == 4 ? ctx.current_layout(x) : Layout::Ember;
  const uint32_t axis = layout == Layout::Nhwc ? nhwc_axis(dim) : uint32_t(dim);
  const int in = ctx.input(x, layout);
  ctx.b->add_node("Softmax", {in}, {ctx.output(ctx.out_value(n), layout)},
                  {scalar_u32("axis", axis), scalar_f32("beta", 1.0f)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_elementwise_ops(QnnOpTable& table) {
  for (const auto& kv : binary_types()) table.add({kv.first.c_str()}, check_binary, lower_binary);
  for (const auto& kv : unary_types()) table.add({kv.first.c_str()}, check_unary, lower_unary);
  table.add({"aten::softmax.int", "aten::_softmax.default"}, check_softmax, lower_softmax);
}

}  // namespace qnn
}  // namespace ember
