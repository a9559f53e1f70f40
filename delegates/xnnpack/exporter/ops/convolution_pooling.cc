// XNNPACK op table, spatial family: convolution, deconvolution, pooling, bilinear resize.
// All run in NHWC; filters are permuted ahead of time (OIHW -> OHWI / 1HWO).
#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"
#include "delegates/xnnpack/exporter/xnnpack_winograd.h"

namespace ember {
namespace xnnpack {
namespace {

size_t rank_of(const Value* x) { return x ? x->sizes.size() : 0; }

std::string check_conv2d(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  const Value* b = tensor_arg(ctx.g, n, 2);
  if (rank_of(x) != 4 || !is_const(w) || w->sizes.size() != 4) return "needs a 4D input and constant 4D weight";
  // A constant image (RAFT's coordinate grid, folded at export) is not an XNNPACK activation.
  if (is_const(x)) return "the input is a constant";
  if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(b)) return "bias must be constant";
  if (n.args.size() > 4 && n.args[4].kind == Arg::Kind::String) return "string padding";
  return "";
}

std::string check_convolution(const XnnLowering& ctx, const Node& n) {
  const std::string reason = check_conv2d(ctx, n);
  if (!reason.empty()) return reason;
  return flag(n, 6) ? "transposed convolution" : "";
}

// conv2d and convolution differ only in where `groups` is.
template <size_t kGroupsArg>
std::string lower_convolution(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  const Value* bias = tensor_arg(ctx.g, n, 2);
  XnnNodeParams prm = ctx.params;
  const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), dil = ints(n, 5, 2, 1);
  const int64_t groups = n.args.size() > kGroupsArg ? n.args[kGroupsArg].i : 1;
  prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
  prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
  prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
  const size_t O = size_t(w->sizes[0]), I = size_t(w->sizes[1]), KH = size_t(w->sizes[2]), KW = size_t(w->sizes[3]);
  const size_t in_channels = size_t(x->sizes[1]);
  prm.kernel = {{uint32_t(KH), uint32_t(KW)}};
  fb::OpType op = fb::OpType::Convolution2d;
  uint32_t filter = kInvalidId;
  if (groups > 1 && size_t(groups) == in_channels && I == 1 && O % size_t(groups) == 0) {
    op = fb::OpType::DepthwiseConvolution2d;
    prm.groups = uint32_t(O / in_channels);  // depth multiplier
    filter = ctx.transformed(w, ".1hwo", {1, KH, KW, O}, depthwise_oihw_to_1hwo(float_data(ctx.g, w), O, KH, KW));
  } else {
    prm.groups = uint32_t(groups);
    filter = ctx.transformed(w, ".ohwi", {O, KH, KW, I}, oihw_to_ohwi(float_data(ctx.g, w), O, I, KH, KW));
    WinogradShape shape;
    shape.kernel_h = KH, shape.kernel_w = KW;
    shape.stride_h = size_t(stride[0]), shape.stride_w = size_t(stride[1]);
    shape.dilation_h = size_t(dil[0]), shape.dilation_w = size_t(dil[1]);
    shape.groups = size_t(groups), shape.in_channels = in_channels, shape.out_channels = O;
    if (const std::vector<int> outs = n.output_values(); !outs.empty() && ctx.g.values[outs[0]].sizes.size() == 4) {
      const std::vector<int64_t>& y = ctx.g.values[outs[0]].sizes;
      shape.batch = size_t(y[0]), shape.out_h = size_t(y[2]), shape.out_w = size_t(y[3]);
    }
    prm.flags |= winograd_flags(shape, ctx.winograd);
  }
  std::vector<uint32_t> ins = {ctx.input(x), filter};
  if (is_const(bias)) ins.push_back(ctx.existing(bias, {O}));
  ctx.result = ctx.b->node(op, ins, prm);
  return "";
}

std::string check_conv_transpose2d(const XnnLowering& ctx, const Node& n) {  // UNet upsampling
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value* w = tensor_arg(ctx.g, n, 1);
  if (rank_of(x) != 4 || !is_const(w) || w->sizes.size() != 4) return "needs a 4D input and constant 4D weight";
  // A constant image (RAFT's coordinate grid, folded at export) is not an XNNPACK activation.
  if (is_const(x)) return "the input is a constant";
  if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(tensor_arg(ctx.g, n, 2))) {
    return "bias must be constant";
  }
  const int64_t groups = n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int ? n.args[6].i : 1;
  if (groups <= 0 || w->sizes[0] % groups != 0 || x->sizes[1] != w->sizes[0]) return "channels do not match groups";
  const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), extra = ints(n, 5, 2, 0);
  for (int d = 0; d < 2; ++d) {
    if (stride[size_t(d)] <= 0 || pad[size_t(d)] < 0 || extra[size_t(d)] < 0 || extra[size_t(d)] >= stride[size_t(d)]) {
      return "unsupported stride / padding / output_padding";
    }
  }
  return "";
}

// XNNPACK's deconvolution. PyTorch's weight [Cin, Cout/groups, KH, KW] becomes XNNPACK's
// [groups * Cout/groups, KH, KW, Cin/groups].
std::string lower_conv_transpose2d(XnnLowering& ctx, const Node& n) {
  const Value* w = tensor_arg(ctx.g, n, 1);
  const Value* bias = tensor_arg(ctx.g, n, 2);
  XnnNodeParams prm = ctx.params;
  const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), extra = ints(n, 5, 2, 0),
                             dil = ints(n, 7, 2, 1);
  const size_t groups = n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int ? size_t(n.args[6].i) : 1;
  const size_t Cin = size_t(w->sizes[0]), Cog = size_t(w->sizes[1]), KH = size_t(w->sizes[2]),
               KW = size_t(w->sizes[3]), Cig = Cin / groups, O = groups * Cog;
  const float* src = float_data(ctx.g, w);
  std::vector<float> ohwi(O * KH * KW * Cig);
  for (size_t gi = 0; gi < groups; ++gi)
    for (size_t oc = 0; oc < Cog; ++oc)
      for (size_t kh = 0; kh < KH; ++kh)
        for (size_t kw = 0; kw < KW; ++kw)
          for (size_t ic = 0; ic < Cig; ++ic)
            ohwi[(((gi * Cog + oc) * KH + kh) * KW + kw) * Cig + ic] =
                src[(((gi * Cig + ic) * Cog + oc) * KH + kh) * KW + kw];
  prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
  prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
  prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
  prm.adjustment = {{uint32_t(extra[0]), uint32_t(extra[1])}};
  prm.kernel = {{uint32_t(KH), uint32_t(KW)}};
  prm.groups = uint32_t(groups);
  std::vector<uint32_t> ins = {ctx.input(tensor_arg(ctx.g, n, 0)), ctx.transformed(w, ".ohwi", {O, KH, KW, Cig}, ohwi)};
  if (is_const(bias)) ins.push_back(ctx.existing(bias, {O}));
  ctx.result = ctx.b->node(fb::OpType::Deconvolution2d, ins, prm);
  return "";
}

std::string check_4d_input(const XnnLowering& ctx, const Node& n) {
  return rank_of(tensor_arg(ctx.g, n, 0)) == 4 ? "" : "needs 4D input";
}

std::string check_avg_pool2d(const XnnLowering& ctx, const Node& n) {
  if (rank_of(tensor_arg(ctx.g, n, 0)) != 4 || flag(n, 4)) return "needs 4D input, ceil_mode=False";
  if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::None) return "divisor_override";
  const std::vector<int64_t> pad = ints(n, 3, 2, 0);
  if ((pad[0] || pad[1]) && (n.args.size() <= 5 || flag(n, 5))) return "padding with count_include_pad=True";
  return "";
}

template <bool kMax>
std::string lower_pool2d(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value& out = ctx.g.values[n.output_values()[0]];
  XnnNodeParams prm = ctx.params;
  const std::vector<int64_t> kernel = ints(n, 1, 2, 1);
  std::vector<int64_t> stride = ints(n, 2, 2, 0);
  if (stride[0] == 0) stride = kernel;
  const std::vector<int64_t> pad = ints(n, 3, 2, 0);
  prm.kernel = {{uint32_t(kernel[0]), uint32_t(kernel[1])}};
  prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
  prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
  if (kMax) {
    const std::vector<int64_t> dil = ints(n, 4, 2, 1);
    prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
    // ceil_mode: extra bottom/right padding (XNNPACK max pooling ignores padded cells)
    // so the floor-mode size equals the graph's output size.
    for (int d = 0; d < 2; ++d) {
      const int64_t in_size = x->sizes[2 + d], out_size = out.sizes[2 + d];
      const int64_t extra = (out_size - 1) * stride[d] + dil[d] * (kernel[d] - 1) + 1 - (in_size + 2 * pad[d]);
      if (extra > 0) prm.padding[d == 0 ? 2 : 1] += uint32_t(extra);
    }
  }
  const uint32_t in = ctx.input(x);
  if (kernel[0] * kernel[1] == 1 && stride[0] == 1 && stride[1] == 1 && pad[0] == 0 && pad[1] == 0) {
    ctx.result = ctx.b->node(fb::OpType::Copy, {in});  // XNNPACK rejects 1x1 pooling; it is the identity
  } else {
    ctx.result = ctx.b->node(kMax ? fb::OpType::MaxPooling2d : fb::OpType::AveragePooling2d, {in}, prm);
  }
  return "";
}

std::string check_adaptive_avg_pool2d(const XnnLowering& ctx, const Node& n) {
  return rank_of(tensor_arg(ctx.g, n, 0)) == 4 && ints(n, 1, 2, 0) == std::vector<int64_t>{1, 1}
             ? ""
             : "only output size 1x1";
}

std::string lower_upsample_bilinear2d(XnnLowering& ctx, const Node& n) {
  const Value& out = ctx.g.values[n.output_values()[0]];
  XnnNodeParams prm = ctx.params;
  prm.new_height = uint64_t(out.sizes[2]);
  prm.new_width = uint64_t(out.sizes[3]);
  prm.flags = flag(n, 2) ? 0x8 /* XNN_FLAG_ALIGN_CORNERS */ : 0;
  ctx.result = ctx.b->node(fb::OpType::StaticResizeBilinear2d, {ctx.input(tensor_arg(ctx.g, n, 0))}, prm);
  return "";
}

}  // namespace

std::string lower_global_average_pooling(XnnLowering& ctx, const Node& n) {
  ctx.result = ctx.b->node(fb::OpType::GlobalAveragePooling2d, {ctx.input(tensor_arg(ctx.g, n, 0))}, ctx.params);
  return "";
}

void add_convolution_pooling_ops(XnnOpTable& t) {
  XnnOpTraits spatial;
  spatial.layout = nhwc_layout;
  XnnOpTraits producer = spatial;  // a following clamp folds into its output range
  producer.takes_fused_clamp = true;
  t.add({"aten::conv2d.default"}, check_conv2d, lower_convolution<6>, producer);
  t.add({"aten::convolution.default"}, check_convolution, lower_convolution<8>, producer);
  t.add({"aten::conv_transpose2d.input"}, check_conv_transpose2d, lower_conv_transpose2d, spatial);
  XnnOpTraits max_pool = producer;
  max_pool.int8 = Int8Fusion::kExact;
  t.add({"aten::max_pool2d.default"}, check_4d_input, lower_pool2d<true>, max_pool);
  t.add({"aten::avg_pool2d.default"}, check_avg_pool2d, lower_pool2d<false>, producer);
  XnnOpTraits global_pool = spatial;
  global_pool.int8 = Int8Fusion::kMean;
  t.add({"aten::adaptive_avg_pool2d.default"}, check_adaptive_avg_pool2d, lower_global_average_pooling, global_pool);
  t.add({"aten::upsample_bilinear2d.vec", "aten::upsample_bilinear2d.default"}, check_4d_input,
        lower_upsample_bilinear2d, spatial);
}

}  // namespace xnnpack
}  // namespace ember
