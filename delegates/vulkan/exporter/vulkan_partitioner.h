// VulkanPartitioner: claims maximal runs of consecutive (hence convex) graph nodes that the
// Vulkan delegate runs (float32, static shapes) and serialises each run as a Vulkan blob.
//
// Constants read by a partition stay in the program's data segments: the blob names each by
// constant slot (exporter::DelegateBlob::constants); the runtime reads them in place at init
// and uploads them to the GPU once. They are not delegate-call arguments. Compile specs:
// exporter::kSummarySpec (claimed ops, for `ember inspect`), "allow_cpu" when set.
#pragma once

#include <string>
#include <vector>

#include "exporter/partition/partitioner.h"

namespace ember {
namespace vulkan {

struct VulkanPartitionerOptions {
  bool allow_cpu = false;   // compile spec "allow_cpu": may run on a CPU Vulkan device
  size_t min_nodes = 1;     // smaller runs stay on the portable kernels
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

 private:
  VulkanPartitionerOptions options_;
};

}  // namespace vulkan
}  // namespace ember
