// VulkanContext: the process-wide Vulkan instance, the chosen physical device, its logical
// device and compute queue, and the pipeline cache shared by every delegate.
//
// Device choice: discrete GPU > integrated GPU > virtual GPU > CPU (e.g. lavapipe), among
// devices with Vulkan >= 1.1 and a compute queue. A CPU device is used only when it is the
// best device there is AND CPU use is allowed (env EMBER_VULKAN_ALLOW_CPU=1, the compile spec
// "allow_cpu", or set_allow_cpu_device(true)): on a phone with no GPU the portable kernels
// beat a software rasteriser.
//
// Lifetime: created on first use, never destroyed (the device must outlive every delegate and
// static destruction order against the Vulkan loader is not defined).
// Thread-safety: get() is thread-safe; submit_and_wait() serialises queue access; the
// pipeline cache is internally locked.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <mutex>

#include "delegates/vulkan/runtime/pipeline_cache.h"
#include "runtime/core/result.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

struct DeviceCandidate {
  VkPhysicalDevice device = VK_NULL_HANDLE;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t queue_family = 0;
  char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE] = {0};
};

class VulkanContext {
 public:
  // The context on the best device. NotSupported (with a message) when there is no Vulkan
  // driver or device, or only a CPU device and CPU use is not allowed.
  static Result<VulkanContext*> get(bool allow_cpu, Diagnostic* diag);
  // True when a Vulkan instance can be created and has a compute-capable device (any type).
  static bool any_device();
  // Why any_device() is false (static storage); "" when a device exists.
  static const char* unavailable_reason();
  // EMBER_VULKAN_ALLOW_CPU=1 in the environment, or set_allow_cpu_device(true).
  static bool cpu_allowed();
  static void set_allow_cpu_device(bool allow);

  VkInstance instance() const { return instance_; }
  VkPhysicalDevice physical_device() const { return physical_; }
  VkDevice device() const { return device_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceProperties& properties() const { return props_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return mem_props_; }
  bool is_cpu() const { return props_.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  // Integrated / CPU devices share memory with the host: map device memory directly.
  bool unified_memory() const;
  PipelineCache& pipelines() { return pipelines_; }

  // 16-bit device features (VkPhysicalDevice16BitStorageFeatures::storageBuffer16BitAccess,
  // VkPhysicalDeviceShaderFloat16Int8Features::shaderFloat16). Each one the device has is
  // enabled at device creation, since the process-wide device is created before any graph
  // says whether it runs in fp16. fp16 graphs need storage_buffer16 only (their shaders do
  // fp32 arithmetic); shader_float16 is recorded for shaders that compute in fp16.
  bool storage_buffer16() const { return storage_buffer16_ && !g_hide_fp16_; }
  bool shader_float16() const { return shader_float16_ && !g_hide_fp16_; }
  // fp16 x fp16 -> fp32 16x16x16 matrix units on 32-wide subgroups (VK_NV_cooperative_matrix,
  // enabled with shaderFloat16 when offered): fp16 graphs' GEMM convolutions and linear layers
  // use conv2d_gemm.comp's matrix-unit variant (graph_lowering.h; EMBER_VULKAN_COOP_MATRIX=0 at
  // a graph's init keeps that graph off it).
  bool cooperative_matrix_f16() const { return cooperative_matrix_f16_ && !g_hide_fp16_; }
  // Tests: make the three queries above report false (simulates a device without them).
  static void set_hide_fp16_features(bool hide) { g_hide_fp16_ = hide; }

  // Submits one command buffer and waits for `fence` (which must be unsignalled); resets it.
  Error submit_and_wait(VkCommandBuffer cb, VkFence fence, Diagnostic* diag);
  // Submits `cb`, signalling `fence` when it completes, without waiting.
  Error submit(VkCommandBuffer cb, VkFence fence, Diagnostic* diag);

 private:
  VulkanContext() = default;
  Error create(Diagnostic* diag);

  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceProperties props_{};
  VkPhysicalDeviceMemoryProperties mem_props_{};
  bool storage_buffer16_ = false;
  bool shader_float16_ = false;
  bool cooperative_matrix_f16_ = false;
  static std::atomic<bool> g_hide_fp16_;
  std::mutex queue_mutex_;
  PipelineCache pipelines_;
};

}  // namespace vulkan
}  // namespace ember
