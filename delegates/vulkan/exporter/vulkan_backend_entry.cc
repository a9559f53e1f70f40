// `--backend vulkan` for the exporter's backend registry (exporter/partition/backend_registry.h):
// options parsed into VulkanPartitionerOptions.
#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "exporter/partition/backend_registry.h"

namespace ember {
namespace vulkan {
namespace {

absl::StatusOr<std::shared_ptr<exporter::Partitioner>> make(const exporter::BackendOptions& options) {
  if (auto s = exporter::check_option_keys("vulkan", options, {"allow_cpu", "fp16", "min_nodes"}); !s.ok()) return s;
  VulkanPartitionerOptions o;
  int64_t min_nodes = int64_t(o.min_nodes);
  if (auto s = exporter::read_bool_option("vulkan", options, "allow_cpu", &o.allow_cpu); !s.ok()) return s;
  if (auto s = exporter::read_bool_option("vulkan", options, "fp16", &o.fp16); !s.ok()) return s;
  if (auto s = exporter::read_int_option("vulkan", options, "min_nodes", 1, 1 << 20, &min_nodes); !s.ok()) return s;
  o.min_nodes = size_t(min_nodes);
  return std::shared_ptr<exporter::Partitioner>(std::make_shared<VulkanPartitioner>(o));
}

}  // namespace
}  // namespace vulkan
}  // namespace ember

EMBER_REGISTER_BACKEND(vulkan, "GPU: Vulkan compute shaders", "allow_cpu=0|1 fp16=0|1 min_nodes=N",
                       ::ember::vulkan::make);
