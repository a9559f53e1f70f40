// XNNPACK op table, normalisation family: layer_norm and group_norm (composed in the blob from
// reductions and elementwise nodes), and the mean / sum reductions they are built from.
#include <set>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

namespace ember {
namespace xnnpack {
namespace {

// Reduction axes of mean.dim / sum.dim_IntList (None or [] = all dims); false when invalid.
bool reduce_axes(const Node& n, size_t rank, std::vector<uint64_t>* axes) {
  axes->clear();
  std::vector<int64_t> d;
  if (n.args.size() > 1 && (n.args[1].kind == Arg::Kind::Ints || n.args[1].kind == Arg::Kind::SymInts)) d = n.args[1].ints;
  if (d.empty()) {
    for (size_t i = 0; i < rank; ++i) d.push_back(int64_t(i));
  }
  std::set<int64_t> seen;
  for (int64_t v : d) {
    v = norm_dim(v, rank);
    if (v < 0 || v >= int64_t(rank) || !seen.insert(v).second) return false;
    axes->push_back(uint64_t(v));
  }
  return !axes->empty();
}

// (x - mean) * rsqrt(mean((x - mean)^2) + eps) with the statistics over `axes` of the
// rank-`rank` tensor x (kept as size-1 dims): layer_norm's and group_norm's normalisation.
uint32_t normalize(XnnBlobBuilder& b, uint32_t x, std::vector<uint64_t> axes, size_t rank, double eps) {
  XnnNodeParams mean;
  mean.axes = std::move(axes);
  mean.reduce_op = 1;
  mean.flags = kKeepDimsFlag;
  const uint32_t centered = b.node(fb::OpType::Subtract, {x, b.node(fb::OpType::StaticReduce, {x}, mean)});
  const uint32_t var = b.node(fb::OpType::StaticReduce, {b.node(fb::OpType::Square, {centered})}, mean);
  const uint32_t inv = b.node(fb::OpType::ReciprocalSquareRoot,
                              {b.node(fb::OpType::Add2, {var, scalar_constant(b, rank, float(eps))})});
  return b.node(fb::OpType::Multiply2, {centered, inv});
}

double norm_eps(const Node& n) { return n.args.size() > 4 && n.args[4].kind == Arg::Kind::Double ? n.args[4].d : 1e-5; }

std::string check_affine_constants(const XnnLowering& ctx, const Node& n) {
  for (size_t i = 2; i < 4; ++i) {
    if (i < n.args.size() && n.args[i].kind != Arg::Kind::None && !is_const(tensor_arg(ctx.g, n, i))) {
      return "weight/bias must be constant";
    }
  }
  return "";
}

std::string check_layer_norm(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const std::vector<int64_t> shape = ints(n, 1, 1, 0);
  if (!x || x->sizes.empty() || shape.size() != 1 || shape[0] != x->sizes.back()) return "only over the last dim";
  return check_affine_constants(ctx, n);
}

// (x - mean) * rsqrt(mean((x - mean)^2) + eps) * weight + bias, over the last dim.
std::string lower_layer_norm(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  const Value* x = tensor_arg(ctx.g, n, 0);
  const size_t rank = x->sizes.size();
  const int64_t C = x->sizes.back();
  uint32_t r = normalize(b, ctx.plain(x), {uint64_t(rank - 1)}, rank, norm_eps(n));
  const Value* w = tensor_arg(ctx.g, n, 2);
  const Value* bias = tensor_arg(ctx.g, n, 3);
  if (is_const(w)) r = b.node(fb::OpType::Multiply2, {r, ctx.existing(w, {size_t(C)})});
  if (is_const(bias)) r = b.node(fb::OpType::Add2, {r, ctx.existing(bias, {size_t(C)})});
  ctx.result = r;
  return "";
}

std::string check_group_norm(const XnnLowering& ctx, const Node& n) {  // diffusion UNets
  const Value* x = tensor_arg(ctx.g, n, 0);
  if (!x || (x->sizes.size() != 3 && x->sizes.size() != 4)) return "needs a 3D or 4D input";
  if (n.args.size() < 2 || n.args[1].kind != Arg::Kind::Int) return "symbolic group count";
  const int64_t groups = n.args[1].i;
  if (groups <= 0 || x->sizes[1] % groups != 0) return "groups must divide the channels";
  return check_affine_constants(ctx, n);
}

// Per sample and group: (x - mean) * rsqrt(var + eps), then a per-channel weight and bias.
// NHWC [N, H, W, C] is viewed as [N, HW, G, C/G] (statistics over dims 1, 3), PyTorch's
// order [N, C, ...] as [N, G, C/G * spatial] (over dim 2); the affine parameters then
// broadcast along C: the last dim in NHWC, dim 1 ([C, 1, ..]) otherwise.
std::string lower_group_norm(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value& out = ctx.g.values[n.output_values()[0]];
  const size_t rank = x->sizes.size();
  const int64_t N = x->sizes[0], C = x->sizes[1], G = n.args[1].i;
  int64_t spatial = 1;
  for (size_t d = 2; d < rank; ++d) spatial *= x->sizes[d];
  const bool channels_last = ctx.nhwc && rank == 4;
  XnnNodeParams grouped, back;
  grouped.new_shape = channels_last ? std::vector<int64_t>{N, spatial, G, C / G}
                                    : std::vector<int64_t>{N, G, (C / G) * spatial};
  const uint32_t normed = normalize(b, b.node(fb::OpType::StaticReshape, {ctx.input(x)}, grouped),
                                    channels_last ? std::vector<uint64_t>{1, 3} : std::vector<uint64_t>{2},
                                    grouped.new_shape.size(), norm_eps(n));
  for (size_t d : ctx.dims(out, ctx.nhwc)) back.new_shape.push_back(int64_t(d));
  uint32_t r = b.node(fb::OpType::StaticReshape, {normed}, back);
  std::vector<size_t> cdims = {size_t(C)};  // per-channel constants, broadcast against r
  if (!channels_last) cdims.resize(rank - 1, 1);
  const Value* w = tensor_arg(ctx.g, n, 2);
  const Value* bias = tensor_arg(ctx.g, n, 3);
  if (is_const(w)) r = b.node(fb::OpType::Multiply2, {r, ctx.existing(w, cdims)});
  if (is_const(bias)) r = b.node(fb::OpType::Add2, {r, ctx.existing(bias, cdims)});
  ctx.result = r;
  return "";
}

std::string check_reduce(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  std::vector<uint64_t> axes;
  if (!x || x->sizes.empty() || !reduce_axes(n, x->sizes.size(), &axes)) return "bad reduction dims";
  if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None) return "dtype argument";
  return "";
}

template <bool kMean>
std::string lower_reduce(XnnLowering& ctx, const Node& n) {
  // mean over H, W of a 4D tensor in NHWC (see mean_layout): global average pooling.
  if (kMean && ctx.nhwc) return lower_global_average_pooling(ctx, n);
  XnnNodeParams prm = ctx.params;
  reduce_axes(n, tensor_arg(ctx.g, n, 0)->sizes.size(), &prm.axes);
  prm.reduce_op = kMean ? 1 : 0;
  prm.flags = flag(n, 2) ? kKeepDimsFlag : 0;
  ctx.result = ctx.b->node(fb::OpType::StaticReduce, {ctx.input(tensor_arg(ctx.g, n, 0))}, prm);
  return "";
}

// mean over H, W of a 4D tensor with keepdim: global average pooling in NHWC, a reduce over
// H, W otherwise; other means index dims.
LayoutNeed mean_layout(const Graph& g, const Node& n) {
  const Value* x = tensor_arg(g, n, 0);
  std::vector<uint64_t> axes;
  if (x && x->sizes.size() == 4 && flag(n, 2) && reduce_axes(n, 4, &axes) &&
      std::set<uint64_t>(axes.begin(), axes.end()) == std::set<uint64_t>{2, 3}) {
    return kAnyLayout;
  }
  return kLogicalLayout;
}

}  // namespace

void add_normalization_ops(XnnOpTable& t) {
  XnnOpTraits layer_norm;
  layer_norm.shapes = ShapeSupport::kBoundedStaticLastDim;
  t.add({"aten::layer_norm.default"}, check_layer_norm, lower_layer_norm, layer_norm);
  XnnOpTraits group_norm;  // lowered for either layout
  group_norm.layout = any_layout;
  t.add({"aten::group_norm.default"}, check_group_norm, lower_group_norm, group_norm);
  XnnOpTraits mean;
  mean.layout = mean_layout;
  mean.int8 = Int8Fusion::kMean;
  t.add({"aten::mean.dim"}, check_reduce, lower_reduce<true>, mean);
  t.add({"aten::sum.dim_IntList"}, check_reduce, lower_reduce<false>, XnnOpTraits());
}

}  // namespace xnnpack
}  // namespace ember
