// The driver's statistics of each compiled pipeline (VK_KHR_pipeline_executable_properties:
// registers, spills, shared memory, instruction counts, whatever the driver reports), printed to
// stderr as pipelines are created when EMBER_VULKAN_PIPELINE_STATS=1, for tuning shaders on a
// device: a shader's occupancy is set by numbers the timings alone do not show.
// Init-time only; off (and the extension not enabled) unless asked for.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

namespace ember {
namespace vulkan {

// Whether EMBER_VULKAN_PIPELINE_STATS=1 asks for the statistics.
bool pipeline_statistics_requested();

// Prints every statistic of every executable of `pipeline` (created with
// VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR on a device with the extension and its feature
// enabled), one line each, prefixed by `shader` and the specialisation `spec`. Prints what went
// wrong instead when the driver refuses.
void print_pipeline_statistics(VkDevice device, VkPipeline pipeline, const char* shader,
                               uint32_t workgroup_size, const std::vector<uint32_t>& spec);

}  // namespace vulkan
}  // namespace ember
