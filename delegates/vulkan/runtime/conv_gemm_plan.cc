#include "delegates/vulkan/runtime/conv_gemm_plan.h"

#include "delegates/vulkan/runtime/tuning_env.h"

namespace ember {
namespace vulkan {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

ConvGemmPlan conv_gemm_plan(int64_t images, int64_t groups, int64_t out_per_group, int64_t pixels, int64_t depth,
                            uint32_t max_workgroup, uint32_t max_shared_bytes, bool static_shapes) {
  ConvGemmPlan plan;
  const bool fits = out_per_group >= 16 && pixels >= 16 && depth >= 16 && max_workgroup >= kConvGemmWorkgroup &&
                    max_shared_bytes >= kConvGemmSharedBytes && static_shapes;
  if (!fits || !tuning_choice("EMBER_VULKAN_CONV_GEMM", true)) return plan;
  plan.use = true;
  const int64_t tiles = images * groups * ceil_div(out_per_group, kConvGemmTile) * ceil_div(pixels, kConvGemmTile);
  const int64_t steps = ceil_div(depth, kConvGemmStep);
  const long target_env = tuning_number("EMBER_VULKAN_CONV_GEMM_WG");
  const int64_t target = target_env > 0 && target_env <= 65536 ? target_env : kConvGemmTargetWorkgroups;
  const long min_env = tuning_number("EMBER_VULKAN_CONV_SPLIT_STEPS");
  const int64_t min_steps = min_env > 0 && min_env <= 1024 ? min_env : kConvGemmMinSplitSteps;
  const int64_t max_splits = steps / min_steps > 1 ? steps / min_steps : 1;
  // Rounded down: a conv of more than half the target's tiles (ResNet's stem: 196) is not split,
  // a reducing dispatch costing more than the workgroups it adds.
  int64_t splits = target / tiles;
  const long fixed = tuning_number("EMBER_VULKAN_CONV_SPLITS");
  if (fixed > 0 && fixed <= 4096) splits = fixed;
  if (splits > max_splits && fixed <= 0) splits = max_splits;
  if (splits > steps) splits = steps;
  if (splits < 1) splits = 1;
  const int64_t chunk_steps = ceil_div(steps, splits);
  plan.splits = ceil_div(steps, chunk_steps);  // no empty range
  plan.chunk = chunk_steps * kConvGemmStep;
  plan.workgroups = tiles * plan.splits;
  plan.partial_floats = plan.splits > 1 ? plan.splits * images * groups * out_per_group * pixels : 0;
  return plan;
}

}  // namespace vulkan
}  // namespace ember
