#include "delegates/vulkan/runtime/pipeline_statistics.h"

#include <cinttypes>
#include <cstdio>
#include <string>

#include "delegates/vulkan/runtime/tuning_env.h"

namespace ember {
namespace vulkan {

bool pipeline_statistics_requested() { return tuning_choice("EMBER_VULKAN_PIPELINE_STATS", false); }

namespace {

std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  char buf[64];
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      return s.value.b32 ? "true" : "false";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      std::snprintf(buf, sizeof(buf), "%" PRId64, s.value.i64);
      return buf;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      std::snprintf(buf, sizeof(buf), "%" PRIu64, s.value.u64);
      return buf;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      std::snprintf(buf, sizeof(buf), "%g", s.value.f64);
      return buf;
    default:
      return "?";
  }
}

}  // namespace

void print_pipeline_statistics(VkDevice device, VkPipeline pipeline, const char* shader,
                               uint32_t workgroup_size, const std::vector<uint32_t>& spec) {
  std::string label = std::string(shader) + "[" + std::to_string(workgroup_size) + "](";
  for (size_t i = 0; i < spec.size(); ++i) label += (i ? "," : "") + std::to_string(static_cast<int32_t>(spec[i]));
  label += ")";
  auto properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (properties == nullptr || statistics == nullptr) {
    std::fprintf(stderr, "ember vulkan pipeline stats: %s: the driver has no executable-properties entry points\n",
                 label.c_str());
    return;
  }
  VkPipelineInfoKHR info{};
  info.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR;
  info.pipeline = pipeline;
  uint32_t executables = 0;
  if (properties(device, &info, &executables, nullptr) != VK_SUCCESS) {
    std::fprintf(stderr, "ember vulkan pipeline stats: %s: the driver reports no executables\n", label.c_str());
    return;
  }
  for (uint32_t e = 0; e < executables; ++e) {
    VkPipelineExecutableInfoKHR exe{};
    exe.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR;
    exe.pipeline = pipeline;
    exe.executableIndex = e;
    uint32_t n = 0;
    if (statistics(device, &exe, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n);
    for (VkPipelineExecutableStatisticKHR& s : stats) s.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
    if (statistics(device, &exe, &n, stats.data()) != VK_SUCCESS) continue;
    std::string line;
    for (uint32_t i = 0; i < n; ++i) line += std::string(i ? "; " : "") + stats[i].name + " " + statistic_value(stats[i]);
    std::fprintf(stderr, "ember vulkan pipeline stats: %s: %s\n", label.c_str(), line.c_str());
  }
}

}  // namespace vulkan
}  // namespace ember
