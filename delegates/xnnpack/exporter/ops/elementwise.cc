// XNNPACK op table, elementwise family: activations, unary math, binary arithmetic, prelu.
// They run in the layout of their inputs (prelu: NHWC); a clamp-like op right after a
// conv / linear / pool / binary op folds into that op's output range.
#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

namespace ember {
namespace xnnpack {
namespace {

std::string check_has_input(const XnnLowering& ctx, const Node& n) {
  return tensor_arg(ctx.g, n, 0) ? "" : "no input";
}

uint32_t first_input(const XnnLowering& ctx, const Node& n) { return ctx.input(tensor_arg(ctx.g, n, 0)); }

// Clamp-like ops: XNNPACK's Clamp over their output range (or folded into the producer's).
void relu_range(const Node&, float* lo, float*) { *lo = 0; }
void relu6_range(const Node&, float* lo, float* hi) { *lo = 0, *hi = 6; }
void hardtanh_range(const Node& n, float* lo, float* hi) { *lo = float(scalar(n, 1, -1)), *hi = float(scalar(n, 2, 1)); }
void clamp_range(const Node& n, float* lo, float* hi) {
  if (has_scalar(n, 1)) *lo = float(scalar(n, 1, 0));
  if (has_scalar(n, 2)) *hi = float(scalar(n, 2, 0));
}

std::string lower_clamp(XnnLowering& ctx, const Node& n) {
  XnnNodeParams prm = ctx.params;
  clamp_output_range(n, &prm);
  ctx.result = ctx.b->node(fb::OpType::Clamp, {first_input(ctx, n)}, prm);
  return "";
}

// One XNNPACK unary node with the op's semantics.
template <fb::OpType kOp>
std::string lower_unary(XnnLowering& ctx, const Node& n) {
  ctx.result = ctx.b->node(kOp, {first_input(ctx, n)});
  return "";
}

std::string lower_silu(XnnLowering& ctx, const Node& n) {  // x * sigmoid(x)
  const uint32_t in = first_input(ctx, n);
  ctx.result = ctx.b->node(fb::OpType::Multiply2, {in, ctx.b->node(fb::OpType::Sigmoid, {in})});
  return "";
}

std::string lower_hardsigmoid(XnnLowering& ctx, const Node& n) {  // clamp(x / 6 + 1/2, 0, 1)
  XnnBlobBuilder& b = *ctx.b;
  const uint32_t in = first_input(ctx, n);
  const float sixth = 1.0f / 6.0f, half = 0.5f;
  const std::vector<size_t> one(xdims(*tensor_arg(ctx.g, n, 0)).size(), 1);
  XnnNodeParams unit;
  unit.output_min = 0.0f;
  unit.output_max = 1.0f;
  ctx.result = b.node(fb::OpType::Add2, {b.node(fb::OpType::Multiply2, {in, b.constant(one, &sixth)}), b.constant(one, &half)},
                      unit);
  return "";
}

bool tanh_gelu(const Node& n) {
  return n.args.size() > 1 && n.args[1].kind == Arg::Kind::String && n.args[1].s == "tanh";
}

std::string check_gelu(const XnnLowering&, const Node& n) {
  const std::string approx = n.args.size() > 1 && n.args[1].kind == Arg::Kind::String ? n.args[1].s : "none";
  return approx == "none" || approx == "tanh" ? "" : "unknown approximation";
}

std::string lower_gelu(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  const uint32_t in = first_input(ctx, n);
  if (!tanh_gelu(n)) {
    ctx.result = b.node(fb::OpType::Gelu, {in});
    return "";
  }
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  const size_t rank = tensor_arg(ctx.g, n, 0)->sizes.size();
  auto c = [&](float v) { return scalar_constant(b, rank, v); };
  const uint32_t inner = b.node(
      fb::OpType::Multiply2,
      {b.node(fb::OpType::Multiply2,
              {in, b.node(fb::OpType::Add2,
                          {b.node(fb::OpType::Multiply2, {b.node(fb::OpType::Square, {in}), c(0.044715f)}), c(1.0f)})}),
       c(0.7978845608028654f)});
  const uint32_t t1 = b.node(fb::OpType::Add2, {b.node(fb::OpType::Tanh, {inner}), c(1.0f)});
  ctx.result = b.node(fb::OpType::Multiply2, {b.node(fb::OpType::Multiply2, {in, t1}), c(0.5f)});
  return "";
}

std::string check_pow(const XnnLowering& ctx, const Node& n) {
  return tensor_arg(ctx.g, n, 0) && (scalar(n, 1, 0) == 2 || scalar(n, 1, 0) == 3) ? "" : "only exponents 2 and 3";
}

std::string lower_pow(XnnLowering& ctx, const Node& n) {  // x^2 = Square; x^3 = Square * x
  const uint32_t in = first_input(ctx, n);
  ctx.result = ctx.b->node(fb::OpType::Square, {in});
  if (scalar(n, 1, 0) == 3) ctx.result = ctx.b->node(fb::OpType::Multiply2, {ctx.result, in});
  return "";
}

std::string check_scalar_binary(const XnnLowering& ctx, const Node& n) {
  return tensor_arg(ctx.g, n, 0) && has_scalar(n, 1) ? "" : "no scalar operand";
}

// x op scalar; add / sub (kAlpha): x op alpha * scalar. The scalar is a one-element constant.
template <fb::OpType kOp, bool kAlpha>
std::string lower_scalar_binary(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const uint32_t c = scalar_constant(*ctx.b, x->sizes.size(), float(scalar(n, 1, 0) * (kAlpha ? scalar(n, 2, 1) : 1.0)));
  ctx.result = ctx.b->node(kOp, {ctx.input(x), c}, ctx.params);
  return "";
}

template <bool kAlpha>
std::string check_binary(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* y = tensor_arg(ctx.g, n, 1);
  if (x && !y && has_scalar(n, 1)) return "";  // x op scalar (alpha folded into the constant)
  if (!x || !y) return "scalar operand";
  if (kAlpha && scalar(n, 2, 1) != 1) return "alpha != 1";
  if (ctx.g.values[n.output_values()[0]].sizes.size() > 6) return "rank > 6";
  return "";
}

// Broadcasting binary op; constants are permuted into NHWC with a 4D output in NHWC.
template <fb::OpType kOp, bool kAlpha>
std::string lower_binary(XnnLowering& ctx, const Node& n) {
  const Value& out = ctx.g.values[n.output_values()[0]];
  const bool out4d = out.sizes.size() == 4;
  const uint32_t a = ctx.operand(tensor_arg(ctx.g, n, 0), out4d);
  uint32_t c = kInvalidId;
  if (tensor_arg(ctx.g, n, 1) != nullptr) {
    c = ctx.operand(tensor_arg(ctx.g, n, 1), out4d);
  } else {  // x op scalar; add/sub: x op alpha * scalar
    c = scalar_constant(*ctx.b, out.sizes.size(), float(scalar(n, 1, 0) * (kAlpha ? scalar(n, 2, 1) : 1.0)));
  }
  ctx.result = ctx.b->node(kOp, {a, c}, ctx.params);
  return "";
}

// A non-4D activation broadcast against a 4D one works only in PyTorch's order.
LayoutNeed binary_layout(const Graph& g, const Node& n) {
  for (size_t i = 0; i < 2; ++i) {
    const Value* v = tensor_arg(g, n, i);
    if (v && v->sizes.size() != 4 && !is_const(v)) return kLogicalLayout;
  }
  return kAnyLayout;
}

std::string check_prelu(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  return x && x->sizes.size() == 4 && is_const(w) && (w->numel() == x->sizes[1] || w->numel() == 1)
             ? ""
             : "needs 4D input, constant slope";
}

std::string lower_prelu(XnnLowering& ctx, const Node& n) {  // slopes per channel (one broadcast)
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  std::vector<float> slope(size_t(x->sizes[1]), float_data(ctx.g, w)[0]);
  if (w->numel() == x->sizes[1]) slope.assign(float_data(ctx.g, w), float_data(ctx.g, w) + x->sizes[1]);
  ctx.result = ctx.b->node(fb::OpType::Prelu, {ctx.input(x), ctx.transformed(w, ".slope", {slope.size()}, slope)});
  return "";
}

}  // namespace

void add_elementwise_ops(XnnOpTable& t) {
  XnnOpTraits elementwise;  // any layout, bounded shapes
  elementwise.layout = any_layout;
  elementwise.shapes = ShapeSupport::kBounded;
  XnnOpTraits clamp = elementwise;
  clamp.int8 = Int8Fusion::kExact;
  clamp.clamp = relu_range;
  t.add({"aten::relu.default"}, check_has_input, lower_clamp, clamp);
  clamp.clamp = relu6_range;
  t.add({"aten::relu6.default"}, check_has_input, lower_clamp, clamp);
  clamp.clamp = hardtanh_range;
  t.add({"aten::hardtanh.default"}, check_has_input, lower_clamp, clamp);
  clamp.clamp = clamp_range;
  t.add({"aten::clamp.default"}, check_has_input, lower_clamp, clamp);

  t.add({"aten::sigmoid.default"}, check_has_input, lower_unary<fb::OpType::Sigmoid>, elementwise);
  t.add({"aten::hardswish.default"}, check_has_input, lower_unary<fb::OpType::HardSwish>, elementwise);
  t.add({"aten::silu.default"}, check_has_input, lower_silu, elementwise);
  t.add({"aten::gelu.default"}, check_gelu, lower_gelu, elementwise);
  t.add({"aten::tanh.default"}, check_has_input, lower_unary<fb::OpType::Tanh>, elementwise);
  t.add({"aten::exp.default"}, check_has_input, lower_unary<fb::OpType::Exp>, elementwise);
  t.add({"aten::log.default"}, check_has_input, lower_unary<fb::OpType::Log>, elementwise);
  t.add({"aten::rsqrt.default"}, check_has_input, lower_unary<fb::OpType::ReciprocalSquareRoot>, elementwise);
  t.add({"aten::neg.default"}, check_has_input, lower_unary<fb::OpType::Negate>, elementwise);
  t.add({"aten::sqrt.default"}, check_has_input, lower_unary<fb::OpType::SquareRoot>, elementwise);
  t.add({"aten::abs.default"}, check_has_input, lower_unary<fb::OpType::Abs>, elementwise);
  t.add({"aten::clone.default", "aten::alias.default"}, check_has_input, lower_unary<fb::OpType::Copy>, elementwise);
  t.add({"aten::floor.default"}, check_has_input, lower_unary<fb::OpType::Floor>, elementwise);
  t.add({"aten::ceil.default"}, check_has_input, lower_unary<fb::OpType::Ceiling>, elementwise);
  t.add({"aten::sin.default"}, check_has_input, lower_unary<fb::OpType::Sine>, elementwise);
  t.add({"aten::cos.default"}, check_has_input, lower_unary<fb::OpType::Cosine>, elementwise);
  t.add({"aten::add.Scalar"}, check_scalar_binary, lower_scalar_binary<fb::OpType::Add2, true>, elementwise);
  t.add({"aten::sub.Scalar"}, check_scalar_binary, lower_scalar_binary<fb::OpType::Subtract, true>, elementwise);
  t.add({"aten::mul.Scalar"}, check_scalar_binary, lower_scalar_binary<fb::OpType::Multiply2, false>, elementwise);
  t.add({"aten::div.Scalar"}, check_scalar_binary, lower_scalar_binary<fb::OpType::Divide, false>, elementwise);

  XnnOpTraits static_elementwise;  // composed from nodes XNNPACK does not reshape here
  static_elementwise.layout = any_layout;
  t.add({"aten::hardsigmoid.default"}, check_has_input, lower_hardsigmoid, static_elementwise);
  t.add({"aten::pow.Tensor_Scalar"}, check_pow, lower_pow, static_elementwise);

  XnnOpTraits binary = elementwise;
  binary.layout = binary_layout;
  binary.takes_fused_clamp = true;
  binary.int8 = Int8Fusion::kAdd;
  t.add({"aten::add.Tensor"}, check_binary<true>, lower_binary<fb::OpType::Add2, true>, binary);
  binary.int8 = Int8Fusion::kMul;
  t.add({"aten::mul.Tensor"}, check_binary<false>, lower_binary<fb::OpType::Multiply2, false>, binary);
  binary.int8 = Int8Fusion::kNone;
  t.add({"aten::sub.Tensor"}, check_binary<true>, lower_binary<fb::OpType::Subtract, true>, binary);
  t.add({"aten::div.Tensor"}, check_binary<false>, lower_binary<fb::OpType::Divide, false>, binary);

  XnnOpTraits spatial;
  spatial.layout = nhwc_layout;
  t.add({"aten::prelu.default"}, check_prelu, lower_prelu, spatial);
}

}  // namespace xnnpack
}  // namespace ember
