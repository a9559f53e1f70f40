// Shape ops on quantized activations, in Ember's (NCHW) element order: Reshape (view, reshape,
// flatten, squeeze, unsqueeze), Transpose (permute, transpose), Concat (NHWC when every input is).
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Arg;
using exporter::Node;

std::string lower_reshape(QnnLowering& ctx, const Node& n) {
  const int in = ctx.input(ctx.arg_value(n, 0), Layout::Ember);
  ctx.b->add_node("Reshape", {in}, {ctx.output(ctx.out_value(n), Layout::Ember)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_permute(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  if (n.kernel_name() == "aten::permute.default" && int_list(n, 1, 1, 0).size() != ctx.arg(n, 0)->sizes.size()) {
    return "permutation of another rank";
  }
  return "";
}

std::string lower_permute(QnnLowering& ctx, const Node& n) {
  const int xv = ctx.arg_value(n, 0);
  const int64_t rank = static_cast<int64_t>(ctx.g.values[xv].sizes.size());
  std::vector<uint32_t> perm;
  if (n.kernel_name() == "aten::permute.default") {
    for (int64_t d : n.args[1].ints) perm.push_back(uint32_t(d < 0 ? d + rank : d));
  } else {  // transpose.int
    for (int64_t d = 0; d < rank; ++d) perm.push_back(uint32_t(d));
    int64_t a = static_cast<int64_t>(number_arg(n, 1, 0)), b = static_cast<int64_t>(number_arg(n, 2, 0));
    if (a < 0) a += rank;
    if (b < 0) b += rank;
    std::swap(perm[size_t(a)], perm[size_t(b)]);
  }
  const int in = ctx.input(xv, Layout::Ember);
  ctx.b->add_node("Transpose", {in}, {ctx.output(ctx.out_value(n), Layout::Ember)}, {tensor_u32("perm", perm)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_cat(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors || n.args[0].refs.empty()) return "no tensor list";
  if (ctx.float_graph) return "";
  const QRep& out = ctx.quant.rep(ctx.out_value(n));
  for (int v : n.args[0].refs) {
    if (v < 0 || !(ctx.quant.rep(v) == out)) return "inputs on another quantization grid than the output";
  }
  return "";
}

std::string lower_cat(QnnLowering& ctx, const Node& n) {
  const std::vector<int>& refs = n.args[0].refs;
  const size_t rank = ctx.g.values[refs[0]].sizes.size();
  int64_t dim = static_cast<int64_t>(number_arg(n, 1, 0));
  if (dim < 0) dim += static_cast<int64_t>(rank);
  Layout layout = rank == 4 ? Layout::Nhwc : Layout::Ember;
  for (int v : refs) {
    if (ctx.current_layout(v) != Layout::Nhwc) layout = Layout::Ember;
  }
  std::vector<int> ins;
  for (int v : refs) ins.push_back(ctx.input(v, layout));
  const uint32_t axis = layout == Layout::Nhwc ? nhwc_axis(dim) : uint32_t(dim);
  ctx.b->add_node("Concat", ins, {ctx.output(ctx.out_value(n), layout)}, {scalar_u32("axis", axis)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_shape_ops(QnnOpTable& table) {
  table.add({"aten::view.default", "aten::reshape.default", "aten::_unsafe_view.default", "aten::flatten.using_ints",
             "aten::squeeze.dim", "aten::squeeze.dims", "aten::unsqueeze.default"},
            check_quantized_float_op, lower_reshape);
  table.add({"aten::permute.default", "aten::transpose.int"}, check_permute, lower_permute);
  table.add({"aten::cat.default"}, check_cat, lower_cat);
}

}  // namespace qnn
}  // namespace ember
