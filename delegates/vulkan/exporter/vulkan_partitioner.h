// VulkanPartitioner: claims maximal runs of consecutive (hence convex) graph nodes that the
// Vulkan delegate runs (float32, static shapes) and serialises each run as a Vulkan blob.
//
// Constants read by a partition stay in the program's data segments: the blob names each by
// constant slot (exporter::DelegateBlob::constants); the runtime reads them in place at init
// and uploads them to the GPU once. They are not delegate-call arguments. Compile specs:
// exporter::kSummarySpec (claimed ops, for `ember inspect`), "allow_cpu" when set. With
// options.fp16 the weights are written as fp16 (see VulkanPartitionerOptions::fp16).
#pragma once

#include <string>
#include <vector>

#include "exporter/partition/partitioner.h"

namespace ember {
namespace vulkan {

struct VulkanPartitionerOptions {
  bool allow_cpu = false;   // compile spec "allow_cpu": may run on a CPU Vulkan device
  size_t min_nodes = 1;     // smaller runs stay on the portable kernels
  // fp16 storage (`ember export --vulkan-fp16`): blobs set CompileOptions.fp16 and float32
  // weights become Float16 constants (new graph constants, half the bytes; the float32
  // original is still emitted if a portable op reads it). Inputs/outputs stay float32.
  bool fp16 = false;
};

class VulkanPartitioner final : public exporter::Partitioner {
 public:
  explicit VulkanPartitioner(VulkanPartitionerOptions options = {}) : options_(options) {}
  std::string backend_id() const override { return "vulkan"; }
  std::vector<std::vector<int>> claim(const exporter::Graph& g) override;
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph& g,
                                                    const exporter::Partition& p) override;

  // Why node `index` is not claimed ("" when it is supported).
  static std::string unsupported_reason(const exporter::Graph& g, int index);
  // Claims are runs of consecutive nodes: CPU-only nodes are moved out of the way first.
  bool prefers_clustering() const override { return true; }
  bool supports(const exporter::Graph& g, int node) const override { return unsupported_reason(g, node).empty(); }

 private:
  VulkanPartitionerOptions options_;
};

}  // namespace vulkan
}  // namespace ember
