#include "delegates/vulkan/runtime/pipeline_cache.h"

#include <cstring>

#include "delegates/vulkan/runtime/vulkan_status.h"

namespace ember {
namespace vulkan {

Result<ShaderObjects> PipelineCache::shader(ShaderId id, Diagnostic* diag) {
  std::lock_guard<std::mutex> lock(mutex_);
  return shader_locked(id, diag);
}

Result<ShaderObjects> PipelineCache::shader_locked(ShaderId id, Diagnostic* diag) {
  ShaderObjects& s = shaders_[static_cast<int>(id)];
  if (s.layout != VK_NULL_HANDLE) return s;
  const ShaderInfo& info = shader_info(id);
  if (s.module == VK_NULL_HANDLE) {
    VkShaderModuleCreateInfo m{};
    m.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
    m.codeSize = info.spirv_words * sizeof(uint32_t);
    m.pCode = info.spirv;
    EMBER_VK_TRY(diag, vkCreateShaderModule(device_, &m, nullptr, &s.module), "creating a shader module");
  }
  if (s.set_layout == VK_NULL_HANDLE) {
    VkDescriptorSetLayoutBinding b[8];
    for (uint32_t i = 0; i < info.num_bindings; ++i) {
      b[i] = VkDescriptorSetLayoutBinding{};
      b[i].binding = i;
      b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      b[i].descriptorCount = 1;
      b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo l{};
    l.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    l.bindingCount = info.num_bindings;
    l.pBindings = b;
    EMBER_VK_TRY(diag, vkCreateDescriptorSetLayout(device_, &l, nullptr, &s.set_layout),
                 "creating a descriptor set layout");
  }
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, info.push_constant_bytes};
  VkPipelineLayoutCreateInfo pl{};
  pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  pl.setLayoutCount = 1;
  pl.pSetLayouts = &s.set_layout;
  pl.pushConstantRangeCount = info.push_constant_bytes > 0 ? 1 : 0;
  pl.pPushConstantRanges = &range;
  EMBER_VK_TRY(diag, vkCreatePipelineLayout(device_, &pl, nullptr, &s.layout), "creating a pipeline layout");
  return s;
}

Result<VkPipeline> PipelineCache::pipeline(ShaderId id, const std::vector<uint32_t>& spec,
                                           uint32_t workgroup_size, Diagnostic* diag) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string key(1, static_cast<char>(id));
  key.append(reinterpret_cast<const char*>(&workgroup_size), sizeof(workgroup_size));
  key.append(reinterpret_cast<const char*>(spec.data()), spec.size() * sizeof(uint32_t));
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;

  EMBER_ASSIGN_OR_RETURN(ShaderObjects s, shader_locked(id, diag));
  if (driver_cache_ == VK_NULL_HANDLE) {
    VkPipelineCacheCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    if (vkCreatePipelineCache(device_, &ci, nullptr, &driver_cache_) != VK_SUCCESS) {
      driver_cache_ = VK_NULL_HANDLE;  // optional
    }
  }
  std::vector<uint32_t> data(spec.size() + 1);
  std::vector<VkSpecializationMapEntry> entries(spec.size() + 1);
  data[0] = workgroup_size;
  for (size_t i = 0; i < spec.size(); ++i) data[i + 1] = spec[i];
  for (uint32_t i = 0; i < entries.size(); ++i) {
    entries[i] = VkSpecializationMapEntry{i, static_cast<uint32_t>(i * sizeof(uint32_t)), sizeof(uint32_t)};
  }
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = data.size() * sizeof(uint32_t);
  si.pData = data.data();

  VkComputePipelineCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = s.module;
  ci.stage.pName = "main";
  ci.stage.pSpecializationInfo = &si;
  ci.layout = s.layout;
  VkPipeline p = VK_NULL_HANDLE;
  EMBER_VK_TRY(diag, vkCreateComputePipelines(device_, driver_cache_, 1, &ci, nullptr, &p),
               "creating a compute pipeline");
  pipelines_.emplace(std::move(key), p);
  return p;
}

size_t PipelineCache::num_pipelines() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pipelines_.size();
}

}  // namespace vulkan
}  // namespace ember
