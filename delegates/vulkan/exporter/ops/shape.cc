// Vulkan op table, shape family: reshapes and other views, permute / transpose / t, expand,
// repeat_interleave, select / slice, cat, and the gathers (index.Tensor on dim 0, embedding).
// All but embedding only move data (traits.moves_data_only: a run of nothing else stays on the
// CPU); the gathers read integer index tensors (traits.takes_indices).
#include <cstdint>
#include <utility>

#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

// Contiguous data keeps its element order: all of these are views of the output shape.
std::string lower_view(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.view(ctx.t(n, 0), ctx.out(n).sizes));
}

std::string lower_permute(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> dims;
  if (!has_arg(n, 1) || !static_ints(n.args[1], &dims)) return "permute dims";
  return ctx.finish(n, ctx.b.permute(ctx.t(n, 0), dims));
}

std::string lower_transpose(VulkanLowering& ctx, const Node& n) {
  const int x = ctx.t(n, 0);
  const int64_t rank = x < 0 ? 0 : static_cast<int64_t>(ctx.b.sizes(x).size());
  int64_t d0 = 0, d1 = 0;
  if (!has_arg(n, 2) || !static_int(n.args[1], &d0) || !static_int(n.args[2], &d1)) return "transpose dims";
  if (!normalize_dim(d0, rank, &d0) || !normalize_dim(d1, rank, &d1)) return "transpose dims out of range";
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1)]);
  return ctx.finish(n, ctx.b.permute(x, perm));
}

std::string lower_t(VulkanLowering& ctx, const Node& n) {
  const int x = ctx.t(n, 0);
  if (x < 0 || ctx.b.sizes(x).size() != 2) return "t of a non-matrix";
  return ctx.finish(n, ctx.b.permute(x, {1, 0}));
}

std::string lower_expand(VulkanLowering& ctx, const Node& n) {
  std::vector<int64_t> sizes;
  if (!has_arg(n, 1) || !static_ints(n.args[1], &sizes)) return "expand sizes";
  return ctx.finish(n, ctx.b.expand(ctx.t(n, 0), sizes));
}

// Each slice along `dim` repeated `repeats` times in place (grouped-query attention's
// key/value heads): view with a size-1 dim after `dim`, expand it, merge the two.
std::string lower_repeat_interleave(VulkanLowering& ctx, const Node& n) {
  int64_t repeats = 0, dim = 0;
  if (!has_arg(n, 2) || !static_int(n.args[1], &repeats) || repeats < 1 || n.args[2].kind != Arg::Kind::Int)
    return "repeat_interleave needs an int repeats and a dim";
  if (has_arg(n, 3) && n.args[3].kind != Arg::Kind::None) return "repeat_interleave output_size";
  const int x = ctx.t(n, 0);
  if (x < 0) return "unmapped input";
  Sizes xs = ctx.b.sizes(x);
  if (!normalize_dim(n.args[2].i, static_cast<int64_t>(xs.size()), &dim)) return "repeat_interleave dim out of range";
  Sizes split = xs, wide = xs;
  split.insert(split.begin() + dim + 1, 1);
  wide.insert(wide.begin() + dim + 1, repeats);
  const int e = ctx.b.expand(ctx.b.view(x, split), wide);
  return ctx.finish(n, e < 0 ? -1 : ctx.b.view(e, ctx.out(n).sizes));
}

// x[idx] with one integer index tensor on dim 0 (RoPE tables indexed by position): a row
// gather, i.e. an embedding lookup over x viewed as [rows, rest].
std::string lower_index(VulkanLowering& ctx, const Node& n) {
  if (!has_arg(n, 1) || (n.args[1].kind != Arg::Kind::OptionalTensors && n.args[1].kind != Arg::Kind::Tensors) ||
      n.args[1].refs.size() != 1 || n.args[1].refs[0] < 0)
    return "index with other than one index tensor on dim 0";
  auto it = ctx.ids.find(n.args[1].refs[0]);
  const int x = ctx.t(n, 0);
  if (it == ctx.ids.end() || x < 0) return "unmapped input";
  const Sizes& xs = ctx.b.sizes(x);
  if (xs.empty()) return "index of a 0-d tensor";
  int64_t rest = 1;
  for (size_t i = 1; i < xs.size(); ++i) rest *= xs[i];
  const int rows = ctx.b.view(x, {xs[0], rest});
  const int g = rows < 0 ? -1 : ctx.b.embedding(rows, it->second);
  return ctx.finish(n, g < 0 ? -1 : ctx.b.view(g, ctx.out(n).sizes));
}

std::string lower_select(VulkanLowering& ctx, const Node& n) {
  int64_t dim = 0, index = 0;
  if (!has_arg(n, 2) || !static_int(n.args[1], &dim) || !static_int(n.args[2], &index)) return "select params";
  const int x = ctx.t(n, 0);
  if (x < 0) return "unmapped input";
  const Sizes& xs = ctx.b.sizes(x);
  if (!normalize_dim(dim, static_cast<int64_t>(xs.size()), &dim)) return "select dim out of range";
  if (index < 0) index += xs[static_cast<size_t>(dim)];
  if (index < 0 || index >= xs[static_cast<size_t>(dim)]) return "select index out of range";
  const int sl = ctx.b.slice(x, static_cast<int32_t>(dim), index, index + 1, 1);
  return ctx.finish(n, sl < 0 ? -1 : ctx.b.view(sl, ctx.out(n).sizes));
}

std::string lower_cat(VulkanLowering& ctx, const Node& n) {
  if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors) return "cat inputs";
  std::vector<int> xs;
  for (int ref : n.args[0].refs) {
    auto it = ctx.ids.find(ref);
    if (it == ctx.ids.end()) return "cat input not mapped";
    xs.push_back(it->second);
  }
  int64_t dim = 0;
  if (has_arg(n, 1) && !static_int(n.args[1], &dim)) return "cat dim";
  return ctx.finish(n, ctx.b.cat(xs, static_cast<int32_t>(dim)));
}

std::string lower_slice(VulkanLowering& ctx, const Node& n) {
  int64_t dim = 0, start = 0, end = INT64_MAX, step = 1;
  if (!has_arg(n, 4) || !static_int(n.args[1], &dim) || !static_int(n.args[4], &step)) return "slice params";
  if (n.args[2].kind != Arg::Kind::None && !static_int(n.args[2], &start)) return "slice start";
  if (n.args[3].kind != Arg::Kind::None && !static_int(n.args[3], &end)) return "slice end";
  return ctx.finish(n, ctx.b.slice(ctx.t(n, 0), static_cast<int32_t>(dim), start, end, step));
}

std::string lower_embedding(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.embedding(ctx.t(n, 0), ctx.t(n, 1)));
}

VulkanOpTraits moves_data() {
  VulkanOpTraits tr;
  tr.moves_data_only = true;
  return tr;
}

// Views take their sizes from the output value (dynamic dims marked), not from their arguments.
VulkanOpTraits view_traits() {
  VulkanOpTraits tr = moves_data();
  tr.sizes_from_output = true;
  return tr;
}

// Lowered through sizes written into the blob (expand's target).
VulkanOpTraits fixed_shape_moves() {
  VulkanOpTraits tr = moves_data();
  tr.fixed_shape = true;
  return tr;
}

VulkanOpTraits gather(bool moves_data_only) {
  VulkanOpTraits tr;
  tr.moves_data_only = moves_data_only;
  tr.takes_indices = true;
  return tr;
}

}  // namespace

void add_shape_ops(VulkanOpTable& t) {
  t.add({"aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default", "aten::squeeze.dim",
         "aten::squeeze.dims", "aten::squeeze.default", "aten::unsqueeze.default", "aten::unflatten.int",
         "aten::flatten.using_ints", "aten::clone.default", "aten::alias.default"},
        nullptr, lower_view, view_traits());
  t.add({"aten::permute.default"}, nullptr, lower_permute, moves_data());
  t.add({"aten::transpose.int"}, nullptr, lower_transpose, moves_data());
  t.add({"aten::t.default"}, nullptr, lower_t, moves_data());
  t.add({"aten::expand.default"}, nullptr, lower_expand, fixed_shape_moves());
  t.add({"aten::repeat_interleave.self_int"}, nullptr, lower_repeat_interleave, fixed_shape_moves());
  t.add({"aten::select.int"}, nullptr, lower_select, moves_data());
  t.add({"aten::slice.Tensor"}, nullptr, lower_slice, moves_data());
  t.add({"aten::cat.default"}, nullptr, lower_cat, moves_data());
  t.add({"aten::index.Tensor"}, nullptr, lower_index, gather(/*moves_data_only=*/true));
  t.add({"aten::embedding.default"}, nullptr, lower_embedding, gather(/*moves_data_only=*/false));
}

}  // namespace vulkan
}  // namespace ember
