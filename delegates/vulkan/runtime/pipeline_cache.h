// PipelineCache: compute pipelines keyed by (shader, specialization constants, workgroup
// size), plus each shader's module, descriptor-set layout and pipeline layout. Shared by all
// delegates on a device; thread-safe. Objects live as long as the device.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "delegates/vulkan/runtime/shader_library.h"
#include "runtime/core/result.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

struct ShaderObjects {
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
};

class PipelineCache {
 public:
  void attach(VkDevice device) { device_ = device; }
  // Module + layouts of `shader`, created on first use.
  Result<ShaderObjects> shader(ShaderId shader, Diagnostic* diag);
  // The pipeline for `shader` with constant_id 0 = workgroup_size and constant_id i+1 =
  // spec[i] (32-bit words: ints or float bit patterns).
  Result<VkPipeline> pipeline(ShaderId shader, const std::vector<uint32_t>& spec,
                              uint32_t workgroup_size, Diagnostic* diag);
  size_t num_pipelines();

 private:
  Result<ShaderObjects> shader_locked(ShaderId shader, Diagnostic* diag);

  VkDevice device_ = VK_NULL_HANDLE;
  std::mutex mutex_;
  VkPipelineCache driver_cache_ = VK_NULL_HANDLE;
  ShaderObjects shaders_[kNumShaders];
  std::map<std::string, VkPipeline> pipelines_;
};

}  // namespace vulkan
}  // namespace ember
