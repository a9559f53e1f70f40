// XNNPACK op table, matrix products and attention: linear / addmm / mm with constant weights
// (fully connected), bmm / matmul (batch matrix multiply), softmax, and
// scaled_dot_product_attention composed in the blob. They index dims: PyTorch's order.
#include <cmath>
#include <limits>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

namespace ember {
namespace xnnpack {
namespace {

std::string check_linear(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  if (!x || x->sizes.empty() || !is_const(w) || w->sizes.size() != 2) return "needs a constant 2D weight";
  if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(tensor_arg(ctx.g, n, 2))) {
    return "bias must be constant";
  }
  return "";
}

std::string lower_linear(XnnLowering& ctx, const Node& n) {
  const Value* w = tensor_arg(ctx.g, n, 1);
  const Value* bias = tensor_arg(ctx.g, n, 2);
  const size_t O = size_t(w->sizes[0]), K = size_t(w->sizes[1]);
  std::vector<uint32_t> ins = {ctx.input(tensor_arg(ctx.g, n, 0)), ctx.existing(w, {O, K})};
  if (is_const(bias)) ins.push_back(ctx.existing(bias, {O}));
  ctx.result = ctx.b->node(fb::OpType::FullyConnected, ins, ctx.params);
  return "";
}

std::string check_addmm(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* m1 = tensor_arg(ctx.g, n, 1);
  const Value* m2 = tensor_arg(ctx.g, n, 2);
  if (!is_const(x) || x->sizes.size() != 1 || !m1 || m1->sizes.size() != 2 || !is_const(m2) ||
      m2->sizes.size() != 2 || x->sizes[0] != m2->sizes[1]) {
    return "needs constant 1D bias [N] and constant mat2";
  }
  if (scalar(n, 3, 1) != 1 || scalar(n, 4, 1) != 1) return "beta/alpha != 1";
  return "";
}

// m1 @ m2 (+ bias) with a constant m2 [K, O]: fully connected with the weight transposed to [O, K].
std::string lower_fully_connected(XnnLowering& ctx, const Node& n, const Value* m1, const Value* m2, const Value* bias) {
  const size_t K = size_t(m2->sizes[0]), O = size_t(m2->sizes[1]);
  std::vector<float> wt(K * O);
  const float* src = float_data(ctx.g, m2);
  for (size_t a = 0; a < K; ++a)
    for (size_t c = 0; c < O; ++c) wt[c * K + a] = src[a * O + c];
  std::vector<uint32_t> ins = {ctx.input(m1), ctx.transformed(m2, ".t", {O, K}, wt)};
  if (bias != nullptr) ins.push_back(ctx.existing(bias, {O}));
  ctx.result = ctx.b->node(fb::OpType::FullyConnected, ins, ctx.params);
  return "";
}

std::string lower_addmm(XnnLowering& ctx, const Node& n) {
  return lower_fully_connected(ctx, n, tensor_arg(ctx.g, n, 1), tensor_arg(ctx.g, n, 2), tensor_arg(ctx.g, n, 0));
}

std::string check_mm(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* m2 = tensor_arg(ctx.g, n, 1);
  return x && x->sizes.size() == 2 && m2 && m2->sizes.size() == 2 ? "" : "needs 2D operands";
}

std::string lower_batch_matmul(XnnLowering& ctx, const Node& n) {
  ctx.result = ctx.b->node(fb::OpType::BatchMatrixMultiply,
                           {ctx.plain(tensor_arg(ctx.g, n, 0)), ctx.plain(tensor_arg(ctx.g, n, 1))});
  return "";
}

std::string lower_mm(XnnLowering& ctx, const Node& n) {  // a constant mat2 is a fully connected weight
  const Value* m2 = tensor_arg(ctx.g, n, 1);
  if (is_const(m2)) return lower_fully_connected(ctx, n, tensor_arg(ctx.g, n, 0), m2, nullptr);
  lower_batch_matmul(ctx, n);
  // XNNPACK's batch matrix multiply has no output range: a clamp folded into mm runs after it.
  if (ctx.params.output_min != XnnNodeParams().output_min || ctx.params.output_max != XnnNodeParams().output_max) {
    ctx.result = ctx.b->node(fb::OpType::Clamp, {ctx.result}, ctx.params);
  }
  return "";
}

template <bool kBmm>
std::string check_batch_matmul(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* y = tensor_arg(ctx.g, n, 1);
  const size_t rank = x ? x->sizes.size() : 0;
  if (!x || !y || rank < 2 || y->sizes.size() < 2 || rank > 6 || y->sizes.size() > 6) return "needs 2D..6D operands";
  if (kBmm && (rank != 3 || y->sizes.size() != 3)) return "needs 3D operands";
  return "";
}

std::string check_softmax(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const size_t rank = x ? x->sizes.size() : 0;
  int64_t dim = n.args.size() > 1 ? n.args[1].i : -1;
  if (dim < 0) dim += int64_t(rank);
  return rank >= 1 && dim == int64_t(rank) - 1 ? "" : "softmax must be over the last dim";
}

std::string lower_softmax(XnnLowering& ctx, const Node& n) {
  ctx.result = ctx.b->node(fb::OpType::Softmax, {ctx.input(tensor_arg(ctx.g, n, 0))});
  return "";
}

std::string check_attention(const XnnLowering& ctx, const Node& n) {
  const Value* q = tensor_arg(ctx.g, n, 0);
  const Value* k = tensor_arg(ctx.g, n, 1);
  const Value* v = tensor_arg(ctx.g, n, 2);
  const size_t rank = q ? q->sizes.size() : 0;
  if (!q || !k || !v || rank < 2 || k->sizes.size() != rank || v->sizes.size() != rank) return "attention ranks";
  if (n.args.size() > 4 && has_scalar(n, 4) && scalar(n, 4, 0) != 0) return "attention dropout";
  if (n.args.size() > 7 && flag(n, 7)) return "enable_gqa";
  if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::None && !has_scalar(n, 6)) return "attention scale";
  if (flag(n, 5) && tensor_arg(ctx.g, n, 3) != nullptr) return "causal attention with a mask";
  if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None && tensor_arg(ctx.g, n, 3) == nullptr) return "mask";
  return "";
}

// softmax(q k^T * scale + mask) v: batch matmul with k transposed by the node itself.
std::string lower_attention(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  const Value* q = tensor_arg(ctx.g, n, 0);
  const Value* k = tensor_arg(ctx.g, n, 1);
  const size_t rank = q->sizes.size();
  const int64_t l = q->sizes[rank - 2], sk = k->sizes[rank - 2], e = q->sizes[rank - 1];
  const double scale = n.args.size() > 6 && has_scalar(n, 6) ? scalar(n, 6, 1) : 1.0 / std::sqrt(double(e));
  XnnNodeParams tb;
  tb.flags = kTransposeBFlag;
  uint32_t scores = b.node(fb::OpType::BatchMatrixMultiply, {ctx.plain(q), ctx.plain(k)}, tb);
  scores = b.node(fb::OpType::Multiply2, {scores, scalar_constant(b, rank, float(scale))});
  const Value* mask = tensor_arg(ctx.g, n, 3);
  if (mask != nullptr) {
    scores = b.node(fb::OpType::Add2, {scores, ctx.plain(mask)});
  } else if (flag(n, 5)) {  // PyTorch's causal mask: query i sees keys j <= i (top-left aligned)
    std::vector<float> m(size_t(l * sk), 0.0f);
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = i + 1; j < sk; ++j) m[size_t(i * sk + j)] = -std::numeric_limits<float>::infinity();
    scores = b.node(fb::OpType::Add2, {scores, b.constant({size_t(l), size_t(sk)}, m.data())});
  }
  ctx.result = b.node(fb::OpType::BatchMatrixMultiply,
                      {b.node(fb::OpType::Softmax, {scores}), ctx.plain(tensor_arg(ctx.g, n, 2))});
  return "";
}

}  // namespace

void add_matmul_attention_ops(XnnOpTable& t) {
  XnnOpTraits fully_connected;  // a following clamp folds into its output range
  fully_connected.takes_fused_clamp = true;
  XnnOpTraits linear = fully_connected;
  linear.shapes = ShapeSupport::kBoundedStaticLastDim;
  t.add({"aten::linear.default"}, check_linear, lower_linear, linear);
  t.add({"aten::addmm.default"}, check_addmm, lower_addmm, fully_connected);
  t.add({"aten::mm.default"}, check_mm, lower_mm, fully_connected);
  t.add({"aten::bmm.default"}, check_batch_matmul<true>, lower_batch_matmul, XnnOpTraits());
  t.add({"aten::matmul.default"}, check_batch_matmul<false>, lower_batch_matmul, XnnOpTraits());
  XnnOpTraits softmax;
  softmax.shapes = ShapeSupport::kBoundedStaticLastDim;
  t.add({"aten::_softmax.default", "aten::softmax.int"}, check_softmax, lower_softmax, softmax);
  t.add({"aten::scaled_dot_product_attention.default"}, check_attention, lower_attention, XnnOpTraits());
}

}  // namespace xnnpack
}  // namespace ember
