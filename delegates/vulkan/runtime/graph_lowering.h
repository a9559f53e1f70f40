// Lowering of a Vulkan delegate blob's nodes to dispatches (shader, specialisation constants,
// push constants, bound tensors), for one value of the graph's dynamic size. Every shape is
// re-derived from the node's inputs with the rules of vulkan_shapes.h, so a corrupt blob
// cannot make a shader index out of bounds:
//   - at the bound (`derive` false) every node's output must have the blob's sizes;
//   - below it (`derive` true) the derived sizes replace them, and must fit the tensor's
//     buffer (allocated at the bound); views take the blob's sizes with the dynamic dims set.
// Internal to the Vulkan runtime (vulkan_graph.cc).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "delegates/vulkan/runtime/dispatch_fusion.h"
#include "delegates/vulkan/runtime/vulkan_graph.h"
#include "delegates/vulkan/vulkan_graph_generated.h"

namespace ember {
namespace vulkan {

// Bytes of one element of `t` (0 for an unknown dtype).
size_t dtype_size(fb::DType t);

struct LoweringResult {
  std::vector<VulkanGraph::Dispatch> dispatches;
  // Attention position inputs: (tensor id, cache rows S); the runtime checks the positions lie
  // in [0, S) before each run.
  std::vector<std::pair<int, int64_t>> positions;
};

// Sets t's sizes and its byte counts (fp16 storage halves the device bytes).
void set_tensor_sizes(VulkanGraph::TensorInfo& t, const Sizes& sizes);

// What the device allows a dispatch (VkPhysicalDeviceLimits).
struct LoweringLimits {
  uint32_t max_shared_bytes = 16384;  // maxComputeSharedMemorySize
  uint32_t max_workgroup = 128;       // min of maxComputeWorkGroupSize[0] and ...Invocations
  // An fp16 graph on a device with VulkanContext::cooperative_matrix_f16(): the GEMM phase of
  // conv2d_gemm.comp dispatches runs its matrix-unit variant (ShaderId::Conv2dGemmCoopFp16).
  bool coop_matrix_f16 = false;
};

// Lowers g's nodes over `tensors` (as parsed: inputs, constants and state available, sizes
// at the current dynamic size), fusing what `plan` (plan_fusions(g), dispatch_fusion.h) says.
Error lower_nodes(const fb::Graph& g, const FusionPlan& plan, bool derive, const LoweringLimits& limits,
                  std::vector<VulkanGraph::TensorInfo>& tensors, LoweringResult* out, Diagnostic* diag);

}  // namespace vulkan
}  // namespace ember
