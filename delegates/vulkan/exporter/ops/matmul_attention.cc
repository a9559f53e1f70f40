// Vulkan op table, matrix products and attention: linear, mm / bmm / matmul (batch dims equal
// or all 1), addmm (beta = alpha = 1), scaled_dot_product_attention (one node, or its pieces).
#include <cmath>
#include <utility>

#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;
using exporter::Value;

std::string lower_linear(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.linear(ctx.t(n, 0), ctx.t(n, 1), ctx.t(n, 2)));
}

std::string lower_matmul(VulkanLowering& ctx, const Node& n) {
  VulkanBlobBuilder& b = ctx.b;
  const int x = ctx.t(n, 0), y = ctx.t(n, 1);
  if (x < 0 || y < 0 || b.sizes(x).size() < 2 || b.sizes(y).size() < 2) return "matmul of vectors";
  const Sizes &as = b.sizes(x), &bs = b.sizes(y);
  const Sizes& os = ctx.out(n).sizes;
  Sizes ob(os.begin(), os.end() - 2);
  for (const Sizes* s : {&as, &bs}) {
    Sizes sb(s->begin(), s->end() - 2);
    while (sb.size() < ob.size()) sb.insert(sb.begin(), 1);
    if (numel(sb) != 1 && sb != ob) return "partially broadcast matmul batch";
  }
  return ctx.finish(n, b.matmul(x, y));
}

// beta * bias + alpha * (x @ w): a matmul and a broadcast add when both factors are 1.
std::string lower_addmm(VulkanLowering& ctx, const Node& n) {
  double beta = 0, alpha = 0;
  if ((has_arg(n, 3) && (!number(n.args[3], &beta) || beta != 1.0)) ||
      (has_arg(n, 4) && (!number(n.args[4], &alpha) || alpha != 1.0)))
    return "addmm beta/alpha other than 1";
  const int bias = ctx.t(n, 0), x = ctx.t(n, 1), w = ctx.t(n, 2);
  if (bias < 0 || x < 0 || w < 0) return "unmapped input";
  const int mm = ctx.b.matmul(x, w);
  return ctx.finish(n, mm < 0 ? -1 : ctx.b.binary(VkBinary::Add, mm, bias));
}

// scaled_dot_product_attention: one Sdpa node (sdpa.comp) for 4-D operands without a causal
// flag whose scores fit a workgroup's shared memory on any Vulkan device; otherwise
// softmax(q @ k^T * scale + mask) @ v: two matmuls, an affine scale, an optional additive float
// mask (or the causal one, as a blob constant) and a softmax. Boolean masks stay on the
// portable kernel (check_value rejects them).
std::string lower_attention(VulkanLowering& ctx, const Node& n) {
  VulkanBlobBuilder& b = ctx.b;
  const int q = ctx.t(n, 0), k = ctx.t(n, 1), v = ctx.t(n, 2);
  int mask = has_arg(n, 3) ? ctx.t(n, 3) : -1;
  double d = 0;
  if (q < 0 || k < 0 || v < 0 || mask == -2) return "unmapped input";
  if (has_arg(n, 4) && (!number(n.args[4], &d) || d != 0.0)) return "attention dropout";
  if (has_arg(n, 7) && n.args[7].kind == Arg::Kind::Bool && n.args[7].b) return "enable_gqa";
  const Sizes& qs = b.sizes(q);
  const Sizes& ks = b.sizes(k);
  if (qs.size() < 2 || ks.size() != qs.size() || b.sizes(v).size() != qs.size()) return "attention ranks";
  const size_t rank = qs.size();
  const int64_t l = qs[rank - 2], s = ks[rank - 2], e = qs[rank - 1];
  double scale = 1.0 / std::sqrt(static_cast<double>(e));
  if (has_arg(n, 6) && n.args[6].kind != Arg::Kind::None && !number(n.args[6], &scale)) return "attention scale";
  const bool causal = has_arg(n, 5) && n.args[5].kind == Arg::Kind::Bool && n.args[5].b;
  if (causal && mask >= 0) return "causal attention with a mask";
  const auto finish = [&](int r) {
    if (r < 0) return b.ok() ? std::string("attention lowering failed") : b.error();
    return ctx.finish(n, r);
  };
  if (!causal && rank == 4 && sdpa_shared_floats(s, e) <= kSdpaMaxSharedFloats)
    return finish(b.sdpa(q, k, v, mask, static_cast<float>(scale)));
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  int scores = b.matmul(q, b.permute(k, perm));
  scores = b.unary(VkUnary::Affine, scores, static_cast<float>(scale), 0.0f);
  if (causal) {  // PyTorch's causal mask: query i sees keys j <= i (top-left aligned)
    std::vector<float> m(static_cast<size_t>(l * s), 0.0f);
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = i + 1; j < s; ++j) m[static_cast<size_t>(i * s + j)] = -INFINITY;
    mask = b.constant({l, s}, m);
  }
  if (mask >= 0) scores = b.binary(VkBinary::Add, scores, mask);
  return finish(b.matmul(b.softmax(scores, static_cast<int32_t>(rank - 1)), v));
}

}  // namespace

void add_matmul_attention_ops(VulkanOpTable& t) {
  t.add({"aten::linear.default"}, nullptr, lower_linear);
  t.add({"aten::mm.default", "aten::bmm.default", "aten::matmul.default"}, nullptr, lower_matmul);
  t.add({"aten::addmm.default"}, nullptr, lower_addmm);
  VulkanOpTraits mask_sized;  // the causal mask is a constant of the bound's sizes
  mask_sized.fixed_shape = true;
  t.add({"aten::scaled_dot_product_attention.default"}, nullptr, lower_attention, mask_sized);
}

}  // namespace vulkan
}  // namespace ember
