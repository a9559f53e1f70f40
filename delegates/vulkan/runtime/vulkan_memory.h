// BufferSet: a group of storage buffers bound into as few device-memory allocations as
// possible (chunks of up to kChunkBytes; a larger buffer gets its own chunk).
//
// Memory policy:
//   Device   : device-local memory. On unified-memory devices (integrated GPU, CPU) a type that
//              is also host-visible + coherent is preferred and mapped, so no staging is
//              needed; on a discrete GPU the buffers are device-only and the caller stages.
//   Staging  : host-visible + coherent memory (cached when available), always mapped.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

class VulkanContext;

enum class MemoryClass { Device, Staging };

struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void* mapped = nullptr;  // non-null when host-visible
};

class BufferSet {
 public:
  static constexpr VkDeviceSize kChunkBytes = VkDeviceSize(256) << 20;

  BufferSet() = default;
  BufferSet(const BufferSet&) = delete;
  BufferSet& operator=(const BufferSet&) = delete;
  ~BufferSet() { reset(); }

  // Creates one buffer per entry of `sizes` (bytes; 0 is rounded up). OutOfMemory when the
  // device runs out, NotSupported when a buffer exceeds the device's storage-buffer range.
  Error create(VulkanContext* context, const std::vector<VkDeviceSize>& sizes, MemoryClass cls,
               Diagnostic* diag);
  void reset();

  size_t size() const { return buffers_.size(); }
  const DeviceBuffer& operator[](size_t i) const { return buffers_[i]; }
  bool host_visible() const { return host_visible_; }
  VkDeviceSize total_bytes() const { return total_bytes_; }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  std::vector<DeviceBuffer> buffers_;
  std::vector<VkDeviceMemory> chunks_;
  bool host_visible_ = false;
  VkDeviceSize total_bytes_ = 0;
};

}  // namespace vulkan
}  // namespace ember
