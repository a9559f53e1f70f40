// Pooling and spatial means on quantized activations (NHWC inside the graph): PoolMax2d,
// PoolAvg2d (also for adaptive average pooling to an output that divides the input), ReduceMean.
#include "delegates/qnn/exporter/qnn_lowering.h"

namespace ember {
namespace qnn {
namespace {

using exporter::Arg;
using exporter::Node;
using exporter::Value;

std::string check_pool(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  const Value* x = ctx.arg(n, 0);
  if (x == nullptr || x->sizes.size() != 4) return "pooling input is not 4-D";
  const std::string k = n.kernel_name();
  if (k == "aten::max_pool2d.default") {
    for (int64_t d : int_list(n, 4, 2, 1)) {
      if (d != 1) return "dilated max pooling";
    }
  }
  if (k == "aten::avg_pool2d.default" && n.args.size() > 6 && n.args[6].kind != Arg::Kind::None) {
    return "avg_pool2d with divisor_override";
  }
  if (k == "aten::adaptive_avg_pool2d.default" || k == "aten::_adaptive_avg_pool2d.default") {
    const std::vector<int64_t> o = int_list(n, 1, 2, 0);
    if (o.size() != 2 || o[0] <= 0 || o[1] <= 0 || x->sizes[2] % o[0] || x->sizes[3] % o[1]) {
      return "adaptive pooling to an output that does not divide the input";
    }
  }
  return "";
}

std::string lower_pool(QnnLowering& ctx, const Node& n) {
  const std::string k = n.kernel_name();
  const Value& x = *ctx.arg(n, 0);
  std::vector<int64_t> kernel, stride, pad = {0, 0};
  bool ceil_mode = false, count_pad = true;
  std::string type = "PoolAvg2d";
  if (k == "aten::adaptive_avg_pool2d.default" || k == "aten::_adaptive_avg_pool2d.default") {
    const std::vector<int64_t> o = int_list(n, 1, 2, 0);
    kernel = {x.sizes[2] / o[0], x.sizes[3] / o[1]};
    stride = kernel;
  } else {
    kernel = int_list(n, 1, 2, 1);
    stride = int_list(n, 2, 2, 0);
    if (stride.empty() || stride[0] == 0) stride = kernel;
    pad = int_list(n, 3, 2, 0);
    if (k == "aten::max_pool2d.default") {
      type = "PoolMax2d";
      ceil_mode = bool_arg(n, 5, false);
    } else {
      ceil_mode = bool_arg(n, 4, false);
      count_pad = bool_arg(n, 5, true);
    }
  }
  std::vector<ParamSpec> params = {
      tensor_u32("filter_size", {uint32_t(kernel[0]), uint32_t(kernel[1])}),
      tensor_u32("stride", {uint32_t(stride[0]), uint32_t(stride[1])}),
      tensor_u32("pad_amount", {uint32_t(pad[0]), uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[1])}, {2, 2}),
      scalar_u32("rounding_mode", ceil_mode ? 1 : 0),
  };
  if (type == "PoolAvg2d") params.push_back(scalar_bool("count_pad_for_edges", count_pad));
  const int in = ctx.input(ctx.arg_value(n, 0), Layout::Nhwc);
  ctx.b->add_node(type, {in}, {ctx.output(ctx.out_value(n), Layout::Nhwc)}, params);
  return ctx.b->ok() ? "" : ctx.b->error();
}

std::string check_mean(const QnnLowering& ctx, const Node& n) {
  if (std::string why = check_quantized_float_op(ctx, n); !why.empty()) return why;
  if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None) return "mean with a dtype";
  if (n.args.size() < 2 || n.args[1].kind != Arg::Kind::Ints || n.args[1].ints.empty()) return "mean over all dims";
  return "";
}

std::string lower_mean(QnnLowering& ctx, const Node& n) {
  const int xv = ctx.arg_value(n, 0);
  const size_t rank = ctx.g.values[xv].sizes.size();
  const bool keep = bool_arg(n, 2, false);
  std::vector<bool> reduced(rank, false);
  for (int64_t d : n.args[1].ints) reduced[static_cast<size_t>(d < 0 ? d + int64_t(rank) : d)] = true;
  // NHWC when the input is already there and the kept dims come out in Ember's order.
  Layout layout = ctx.current_layout(xv);
  if (layout == Layout::Nhwc && rank == 4 && !keep && !(reduced[2] && reduced[3] && !reduced[1])) layout = Layout::Ember;
  std::vector<uint32_t> axes;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) axes.push_back(layout == Layout::Nhwc && rank == 4 ? nhwc_axis(int64_t(d)) : uint32_t(d));
  }
  const int in = ctx.input(xv, layout);
  const int out = ctx.output(ctx.out_value(n), keep ? layout : Layout::Ember);
  ctx.b->add_node("ReduceMean", {in}, {out}, {tensor_u32("axes", axes), scalar_bool("keep_dims", keep)});
  return ctx.b->ok() ? "" : ctx.b->error();
}

}  // namespace

void add_pooling_ops(QnnOpTable& table) {
  table.add({"aten::max_pool2d.default", "aten::avg_pool2d.default", "aten::adaptive_avg_pool2d.default",
             "aten::_adaptive_avg_pool2d.default"},
            check_pool, lower_pool);
  table.add({"aten::mean.dim"}, check_mean, lower_mean);
}

}  // namespace qnn
}  // namespace ember
