// Vulkan op table, the fused decoder ops of exporter/passes/fuse_llm_attention.cc (semantics in
// kernels/optimized/llm_kernels.cc): rms_norm, rope, silu_mul, and sdpa_with_kv_cache with its
// KV cache kept on the GPU as State tensors (updated in place, never copied back).
#include <cmath>

#include "delegates/vulkan/exporter/vulkan_lowering.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Node;

std::string lower_rms_norm(VulkanLowering& ctx, const Node& n) {
  double eps = 0;
  if (!has_arg(n, 2) || !number(n.args[2], &eps) || !(eps >= 0) || !std::isfinite(eps)) return "rms_norm eps";
  return ctx.finish(n, ctx.b.rms_norm(ctx.t(n, 0), ctx.t(n, 1), static_cast<float>(eps)));
}

std::string lower_rope(VulkanLowering& ctx, const Node& n) {
  return ctx.finish(n, ctx.b.rope(ctx.t(n, 0), ctx.t(n, 1), ctx.t(n, 2)));
}

std::string lower_silu_mul(VulkanLowering& ctx, const Node& n) {
  const int a = ctx.t(n, 0), b = ctx.t(n, 1);
  if (a < 0 || b < 0) return "unmapped input";
  if (ctx.b.sizes(a) != ctx.b.sizes(b)) return "silu_mul of different shapes";
  return ctx.finish(n, ctx.b.binary(VkBinary::SiluMul, a, b));
}

// (query, key, value, key_cache, value_cache, input_pos, scale?) -> (out, key_cache, value_cache)
std::string lower_sdpa_with_kv_cache(VulkanLowering& ctx, const Node& n) {
  if (n.args.size() < 6) return "sdpa_with_kv_cache arguments";
  const int q = ctx.t(n, 0);
  double scale = 0;
  if (q < 0) return "unmapped input";
  const Sizes& qs = ctx.b.sizes(q);
  if (qs.size() != 4) return "attention query is not 4-D";
  if (has_arg(n, 6) && n.args[6].kind != Arg::Kind::None) {
    if (!number(n.args[6], &scale)) return "attention scale";
  } else {
    scale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
  }
  return ctx.finish(n, ctx.b.attention(q, ctx.t(n, 1), ctx.t(n, 2), ctx.t(n, 3), ctx.t(n, 4), ctx.t(n, 5),
                                       static_cast<float>(scale)));
}

}  // namespace

void add_llm_ops(VulkanOpTable& t) {
  t.add({"ember_llm::rms_norm.default"}, nullptr, lower_rms_norm);
  t.add({"ember_llm::rope.default"}, nullptr, lower_rope);
  t.add({"ember_llm::silu_mul.default"}, nullptr, lower_silu_mul);
  VulkanOpTraits cache;
  cache.updates_state = true;
  cache.takes_indices = true;  // input_pos
  t.add({"ember_llm::sdpa_with_kv_cache.default"}, nullptr, lower_sdpa_with_kv_cache, cache);
}

}  // namespace vulkan
}  // namespace ember
