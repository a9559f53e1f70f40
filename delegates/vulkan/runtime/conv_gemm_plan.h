// conv2d_gemm.comp's work split: whether a convolution runs as an implicit GEMM (64x64 output
// tiles, 256 invocations each), and into how many k ranges its reduction is split so that
// enough workgroups fill the GPU (the partial sums then go through a scratch buffer and a
// second, reducing dispatch).
// A pure function of the shapes and the device's workgroup limit (plus EMBER_VULKAN_CONV_GEMM*
// overrides for measuring on a device), so the lowering and the tests see the same choice.
#pragma once

#include <cstdint>

namespace ember {
namespace vulkan {

// conv2d_gemm.comp's tile: 64 output channels x 64 pixels, 16-deep k steps, 256 invocations.
constexpr int64_t kConvGemmTile = 64, kConvGemmStep = 16;
constexpr uint32_t kConvGemmWorkgroup = 256;
// Its shared memory: the A and B k-step tiles and the finished tile (vec4 rows padded by one).
constexpr uint32_t kConvGemmSharedBytes = (16 * 17 + 16 * 17 + 64 * 17) * 16;
// The matrix-unit variant's (fp16 A [64][40] and B [32][72] k-step tiles, the fp32 tile [64][68];
// its 32-deep steps read the same k ranges, a range's last step zero-padded).
constexpr uint32_t kConvGemmCoopSharedBytes = (64 * 40 + 32 * 72) * 2 + 64 * 68 * 4;

struct ConvGemmPlan {
  bool use = false;          // false: conv2d.comp (the direct or the split-K loop)
  int64_t splits = 1;        // k ranges; > 1: partial sums + the reducing dispatch
  int64_t chunk = 0;         // k per range, a multiple of kConvGemmStep
  int64_t workgroups = 0;    // of the GEMM dispatch
  int64_t partial_floats = 0;  // scratch: splits * images * out_channels * pixels (0 when splits == 1)
};

// images, groups, out channels per group, pixels per output plane, reduction depth
// (in channels per group * KH * KW). Used where a group has >= 16 output channels, a plane >= 16
// pixels and the reduction >= 16 (depthwise and 1x1-plane convolutions keep the direct loop),
// the device allows 256-invocation workgroups and kConvGemmSharedBytes of shared memory, and `static_shapes` (the scratch's size and the
// dispatch count must not change with a dynamic size).
// Splits: kConvGemmTargetWorkgroups / tiles (rounded down), each range at least
// kConvGemmMinSplitSteps k steps.
// Overrides, read on every call (init only): EMBER_VULKAN_CONV_GEMM (0 / 1: the path, where the
// shapes allow it), EMBER_VULKAN_CONV_GEMM_WG (the workgroup target), EMBER_VULKAN_CONV_SPLITS
// (a fixed split count, capped by the k steps), EMBER_VULKAN_CONV_SPLIT_STEPS (the least k steps
// of a range).
constexpr int64_t kConvGemmTargetWorkgroups = 256;  // H200: 256 vs 512 vs 1024 within 5%
constexpr int64_t kConvGemmMinSplitSteps = 4;
ConvGemmPlan conv_gemm_plan(int64_t images, int64_t groups, int64_t out_per_group, int64_t pixels, int64_t depth,
                            uint32_t max_workgroup, uint32_t max_shared_bytes, bool static_shapes);

}  // namespace vulkan
}  // namespace ember
