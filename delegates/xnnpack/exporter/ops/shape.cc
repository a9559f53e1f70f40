// XNNPACK op table, shape family: reshapes, permute / transpose, slice / select / unbind, cat,
// expand, repeat_interleave, constant_pad_nd. Ops that index dims run in PyTorch's order,
// except where NCHW and NHWC agree (trivial reshapes) or the dims are remapped (cat, pad).
#include <algorithm>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_lowering.h"

namespace ember {
namespace xnnpack {
namespace {

const Value& output(const XnnLowering& ctx, const Node& n) { return ctx.g.values[n.output_values()[0]]; }
size_t rank_of(const Value* x) { return x ? x->sizes.size() : 0; }

std::string check_has_input(const XnnLowering& ctx, const Node& n) {
  return tensor_arg(ctx.g, n, 0) ? "" : "no input";
}

std::string lower_reshape(XnnLowering& ctx, const Node& n) {
  XnnNodeParams prm = ctx.params;
  for (size_t d : ctx.dims(output(ctx, n), ctx.nhwc)) prm.new_shape.push_back(int64_t(d));
  ctx.result = ctx.b->node(fb::OpType::StaticReshape, {ctx.input(tensor_arg(ctx.g, n, 0))}, prm);
  return "";
}

// A reshape between tensors whose NCHW and NHWC bytes agree runs in either layout.
LayoutNeed reshape_layout(const Graph& g, const Node& n) {
  const Value* x = tensor_arg(g, n, 0);
  return x && trivial4d(*x) && trivial4d(g.values[n.output_values()[0]]) ? kAnyLayout : kLogicalLayout;
}

std::string check_permute(const XnnLowering& ctx, const Node& n) {
  const size_t rank = rank_of(tensor_arg(ctx.g, n, 0));
  return rank >= 1 && ints(n, 1, 0, 0).size() == rank ? "" : "needs one dim per input dim";
}

std::string check_transpose(const XnnLowering& ctx, const Node& n) {
  return rank_of(tensor_arg(ctx.g, n, 0)) >= 1 ? "" : "scalar input";
}

template <bool kPermute>
std::string lower_transpose(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  XnnNodeParams prm = ctx.params;
  const size_t rank = x->sizes.size();
  if (kPermute) {
    for (int64_t d : ints(n, 1, 0, 0)) prm.axes.push_back(uint64_t(norm_dim(d, rank)));
  } else {  // transpose(d0, d1): the identity with two axes swapped
    for (size_t d = 0; d < rank; ++d) prm.axes.push_back(d);
    const int64_t d0 = norm_dim(n.args[1].i, rank), d1 = norm_dim(n.args[2].i, rank);
    if (d0 >= 0 && d1 >= 0 && d0 < int64_t(rank) && d1 < int64_t(rank)) std::swap(prm.axes[size_t(d0)], prm.axes[size_t(d1)]);
  }
  ctx.result = ctx.b->node(fb::OpType::StaticTranspose, {ctx.plain(x)}, prm);
  return "";
}

std::string check_slice(const XnnLowering& ctx, const Node& n) {
  if (rank_of(tensor_arg(ctx.g, n, 0)) == 0) return "scalar input";
  if (n.args.size() > 4 && n.args[4].kind == Arg::Kind::Int && n.args[4].i != 1) return "step != 1";
  for (size_t i = 2; i < 4 && i < n.args.size(); ++i) {
    if (n.args[i].kind != Arg::Kind::Int && n.args[i].kind != Arg::Kind::None) return "symbolic start/end";
  }
  for (int64_t d : output(ctx, n).sizes) {
    if (d == 0) return "empty slice";
  }
  return "";
}

std::string lower_slice(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  XnnNodeParams prm = ctx.params;
  const size_t rank = x->sizes.size();
  const int64_t dim = norm_dim(n.args.size() > 1 ? n.args[1].i : 0, rank);
  int64_t start = n.args.size() > 2 && n.args[2].kind == Arg::Kind::Int ? n.args[2].i : 0;
  const int64_t size = dim >= 0 && dim < int64_t(rank) ? x->sizes[size_t(dim)] : 0;
  if (start < 0) start += size;
  start = std::max<int64_t>(0, std::min(start, size));
  prm.offsets.assign(rank, 0);
  prm.sizes.assign(output(ctx, n).sizes.begin(), output(ctx, n).sizes.end());
  if (dim >= 0 && dim < int64_t(rank)) prm.offsets[size_t(dim)] = uint64_t(start);
  ctx.result = ctx.b->node(fb::OpType::StaticSlice, {ctx.plain(x)}, prm);
  return "";
}

// Element `index` of x along `dim` (a one-wide slice, then that dim dropped): select / unbind.
uint32_t select_along(XnnBlobBuilder& b, uint32_t x, const std::vector<int64_t>& x_sizes, size_t dim,
                      uint64_t index, const std::vector<int64_t>& out_sizes) {
  XnnNodeParams slice, shape;
  slice.offsets.assign(x_sizes.size(), 0);
  slice.sizes.assign(x_sizes.begin(), x_sizes.end());
  slice.offsets[dim] = index;
  slice.sizes[dim] = 1;
  shape.new_shape = out_sizes;
  return b.node(fb::OpType::StaticReshape, {b.node(fb::OpType::StaticSlice, {x}, slice)}, shape);
}

int64_t unbind_dim(const Node& n, size_t rank) {
  return norm_dim(n.args.size() > 1 && n.args[1].kind == Arg::Kind::Int ? n.args[1].i : 0, rank);
}

std::string check_unbind(const XnnLowering& ctx, const Node& n) {  // timm's attention: q, k, v = qkv.unbind(0)
  const Value* x = tensor_arg(ctx.g, n, 0);
  const size_t rank = rank_of(x);
  if (rank == 0) return "scalar input";
  const int64_t dim = unbind_dim(n, rank);
  if (dim < 0 || dim >= int64_t(rank)) return "dim out of range";
  return n.output_values().size() == size_t(x->sizes[size_t(dim)]) ? "" : "outputs do not match the dim's size";
}

std::string lower_unbind(XnnLowering& ctx, const Node& n) {  // per output: a one-wide slice, then the dim dropped
  const Value* x = tensor_arg(ctx.g, n, 0);
  const size_t dim = size_t(unbind_dim(n, x->sizes.size()));
  const std::vector<int> parts = n.output_values();
  for (size_t j = 0; j < parts.size(); ++j) {
    ctx.id[parts[j]] = select_along(*ctx.b, ctx.plain(x), x->sizes, dim, uint64_t(j), ctx.g.values[parts[j]].sizes);
  }
  ctx.result = ctx.id[parts[0]];
  return "";
}

std::string check_select(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const size_t rank = rank_of(x);
  if (rank == 0 || n.args.size() < 3 || n.args[2].kind != Arg::Kind::Int) return "symbolic index";
  const int64_t dim = norm_dim(n.args[1].i, rank);
  if (dim < 0 || dim >= int64_t(rank)) return "dim out of range";
  const int64_t size = x->sizes[size_t(dim)], index = n.args[2].i;
  return index >= -size && index < size ? "" : "index out of range";
}

std::string lower_select(XnnLowering& ctx, const Node& n) {  // a one-wide slice, then the dim dropped
  const Value* x = tensor_arg(ctx.g, n, 0);
  const int64_t dim = norm_dim(n.args[1].i, x->sizes.size());
  int64_t index = n.args[2].i;
  if (index < 0) index += x->sizes[size_t(dim)];
  ctx.result = select_along(*ctx.b, ctx.plain(x), x->sizes, size_t(dim), uint64_t(index), output(ctx, n).sizes);
  return "";
}

std::string check_cat(const XnnLowering& ctx, const Node& n) {
  const Value& out = output(ctx, n);
  if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors) return "no tensor list";
  const std::vector<int>& refs = n.args[0].refs;
  if (refs.size() < 2 || refs.size() > 5) return "concatenates 2..5 tensors";
  for (int v : refs) {
    if (ctx.g.values[v].sizes.size() != out.sizes.size() || ctx.g.values[v].numel() == 0) {
      return "inputs of another rank or empty";
    }
  }
  return out.sizes.empty() ? "scalar output" : "";
}

std::string lower_cat(XnnLowering& ctx, const Node& n) {
  const Value& out = output(ctx, n);
  XnnNodeParams prm = ctx.params;
  std::vector<uint32_t> ins;
  const bool remap = ctx.nhwc && out.sizes.size() == 4;  // NCHW axis -> NHWC axis
  for (int v : n.args[0].refs) ins.push_back(remap ? ctx.operand(&ctx.g.values[v], true) : ctx.plain(&ctx.g.values[v]));
  prm.axis = uint32_t(norm_dim(n.args.size() > 1 ? n.args[1].i : 0, out.sizes.size()));
  if (remap) prm.axis = std::vector<uint32_t>{0, 3, 1, 2}[prm.axis];
  ctx.result = ctx.b->node(fb::OpType::Concatenate, ins, prm);
  return "";
}

// Concatenating 4D tensors remaps the axis in NHWC; mixed ranks only in PyTorch's order.
LayoutNeed cat_layout(const Graph& g, const Node& n) {
  for (int v : n.args[0].refs) {
    if (g.values[v].sizes.size() != 4) return kLogicalLayout;
  }
  return kAnyLayout;
}

std::string check_expand(const XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value& out = output(ctx, n);
  if (!x || out.sizes.size() > 6 || x->sizes.size() > out.sizes.size()) return "rank > 6 or shrinking rank";
  return "";
}

// x + zeros, the zeros shaped like the output where x broadcasts and 1 elsewhere.
std::string lower_expand(XnnLowering& ctx, const Node& n) {
  const Value* x = tensor_arg(ctx.g, n, 0);
  const Value& out = output(ctx, n);
  const size_t rank = out.sizes.size(), xr = x->sizes.size();
  std::vector<size_t> zd(rank, 1);
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t xs = d + xr >= rank ? x->sizes[d + xr - rank] : 1;
    if (xs != out.sizes[d]) zd[d] = size_t(out.sizes[d]);
    count *= zd[d];
  }
  const std::vector<float> zeros(count, 0.0f);
  ctx.result = ctx.b->node(fb::OpType::Add2, {ctx.plain(x), ctx.b->constant(zd, zeros.data())});
  return "";
}

std::string check_repeat_interleave(const XnnLowering& ctx, const Node& n) {
  const size_t rank = rank_of(tensor_arg(ctx.g, n, 0));
  if (rank == 0 || rank > 5 || n.args.size() < 3 || n.args[1].kind != Arg::Kind::Int ||
      n.args[2].kind != Arg::Kind::Int || n.args[1].i < 1) {
    return "needs constant repeats, a dim and rank <= 5";
  }
  const int64_t dim = norm_dim(n.args[2].i, rank);
  return dim >= 0 && dim < int64_t(rank) ? "" : "dim out of range";
}

// [.., s_d, ..] -> [.., s_d, 1, ..] -> + zeros [1.., r, 1..] -> [.., s_d * r, ..]
std::string lower_repeat_interleave(XnnLowering& ctx, const Node& n) {
  XnnBlobBuilder& b = *ctx.b;
  const Value* x = tensor_arg(ctx.g, n, 0);
  XnnNodeParams prm = ctx.params;
  const size_t rank = x->sizes.size(), dim = size_t(norm_dim(n.args[2].i, rank));
  const int64_t reps = n.args[1].i;
  XnnNodeParams split;
  std::vector<size_t> zd(rank + 1, 1);
  for (size_t d = 0; d <= rank; ++d) {
    split.new_shape.push_back(d <= dim ? x->sizes[d] : d == dim + 1 ? 1 : x->sizes[d - 1]);
  }
  zd[dim + 1] = size_t(reps);
  const std::vector<float> zeros(size_t(reps), 0.0f);
  const uint32_t wide =
      b.node(fb::OpType::Add2, {b.node(fb::OpType::StaticReshape, {ctx.plain(x)}, split), b.constant(zd, zeros.data())});
  for (int64_t d : output(ctx, n).sizes) prm.new_shape.push_back(d);
  ctx.result = b.node(fb::OpType::StaticReshape, {wide}, prm);
  return "";
}

std::string check_constant_pad(const XnnLowering& ctx, const Node& n) {
  const std::vector<int64_t> pad = ints(n, 1, 0, 0);
  if (pad.size() % 2 || pad.size() > 2 * rank_of(tensor_arg(ctx.g, n, 0))) return "bad pad list";
  for (int64_t p : pad) {
    if (p < 0) return "negative padding";
  }
  return "";
}

std::string lower_constant_pad(XnnLowering& ctx, const Node& n) {  // PyTorch lists pads from the last dim
  const Value* x = tensor_arg(ctx.g, n, 0);
  XnnNodeParams prm = ctx.params;
  const std::vector<int64_t> pad = ints(n, 1, 0, 0);
  const size_t rank = x->sizes.size();
  std::vector<uint64_t> pre(rank, 0), post(rank, 0);
  for (size_t j = 0; j < pad.size() / 2; ++j) {
    pre[rank - 1 - j] = uint64_t(pad[2 * j]);
    post[rank - 1 - j] = uint64_t(pad[2 * j + 1]);
  }
  if (rank == 4 && ctx.nhwc) {
    prm.pre_paddings = {pre[0], pre[2], pre[3], pre[1]};
    prm.post_paddings = {post[0], post[2], post[3], post[1]};
  } else {
    prm.pre_paddings = pre;
    prm.post_paddings = post;
  }
  prm.padding_value = float(scalar(n, 2, 0));
  ctx.result = ctx.b->node(fb::OpType::StaticConstantPad, {ctx.input(x)}, prm);
  return "";
}

}  // namespace

void add_shape_ops(XnnOpTable& t) {
  XnnOpTraits reshape;
  reshape.layout = reshape_layout;
  reshape.reshape = true;
  t.add({"aten::unsqueeze.default", "aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze.default",
         "aten::unflatten.int"},
        check_has_input, lower_reshape, reshape);
  reshape.int8 = Int8Fusion::kExact;  // these also pass int8 tensors through unchanged
  t.add({"aten::view.default", "aten::reshape.default", "aten::_unsafe_view.default", "aten::flatten.using_ints"},
        check_has_input, lower_reshape, reshape);

  t.add({"aten::permute.default"}, check_permute, lower_transpose<true>, XnnOpTraits());
  t.add({"aten::transpose.int"}, check_transpose, lower_transpose<false>, XnnOpTraits());
  t.add({"aten::slice.Tensor"}, check_slice, lower_slice, XnnOpTraits());
  t.add({"aten::select.int"}, check_select, lower_select, XnnOpTraits());
  XnnOpTraits unbind;
  unbind.several_outputs = true;
  t.add({"aten::unbind.int"}, check_unbind, lower_unbind, unbind);
  XnnOpTraits cat;
  cat.layout = cat_layout;
  cat.tensor_list_input = true;
  cat.int8 = Int8Fusion::kExact;
  t.add({"aten::cat.default"}, check_cat, lower_cat, cat);
  t.add({"aten::expand.default"}, check_expand, lower_expand, XnnOpTraits());
  t.add({"aten::repeat_interleave.self_int"}, check_repeat_interleave, lower_repeat_interleave, XnnOpTraits());
  XnnOpTraits pad;
  pad.layout = any_layout;
  t.add({"aten::constant_pad_nd.default"}, check_constant_pad, lower_constant_pad, pad);
}

}  // namespace xnnpack
}  // namespace ember
