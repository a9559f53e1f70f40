#include "delegates/vulkan/runtime/vulkan_memory.h"

#include "delegates/vulkan/runtime/vulkan_context.h"
#include "delegates/vulkan/runtime/vulkan_status.h"

namespace ember {
namespace vulkan {
namespace {

constexpr VkMemoryPropertyFlags kHost =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

// First memory type in `bits` having all of `want`; -1 when none.
int find_type(const VkPhysicalDeviceMemoryProperties& mp, uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
  }
  return -1;
}

int choose_type(const VulkanContext& c, uint32_t bits, MemoryClass cls) {
  const VkPhysicalDeviceMemoryProperties& mp = c.memory_properties();
  int t = -1;
  if (cls == MemoryClass::Staging) {
    t = find_type(mp, bits, kHost | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (t < 0) t = find_type(mp, bits, kHost);
    return t;
  }
  if (c.unified_memory()) t = find_type(mp, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | kHost);
  if (t < 0) t = find_type(mp, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  if (t < 0) t = find_type(mp, bits, 0);
  return t;
}

VkDeviceSize align_up(VkDeviceSize v, VkDeviceSize a) { return a == 0 ? v : (v + a - 1) / a * a; }

}  // namespace

Error BufferSet::create(VulkanContext* context, const std::vector<VkDeviceSize>& sizes,
                        MemoryClass cls, Diagnostic* diag) {
  reset();
  device_ = context->device();
  const VkDeviceSize max_range = context->properties().limits.maxStorageBufferRange;
  buffers_.resize(sizes.size());
  std::vector<VkMemoryRequirements> reqs(sizes.size());
  uint32_t bits = ~0u;
  for (size_t i = 0; i < sizes.size(); ++i) {
    VkDeviceSize bytes = align_up(sizes[i] == 0 ? 4 : sizes[i], 16);
    if (bytes > max_range) {
      return fail(diag, Error::NotSupported,
                  "vulkan: a %llu-byte tensor exceeds this device's storage-buffer range (%llu bytes)",
                  static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(max_range));
    }
    VkBufferCreateInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    EMBER_VK_TRY(diag, vkCreateBuffer(device_, &bi, nullptr, &buffers_[i].buffer), "creating a buffer");
    buffers_[i].size = bytes;
    vkGetBufferMemoryRequirements(device_, buffers_[i].buffer, &reqs[i]);
    bits &= reqs[i].memoryTypeBits;
  }
  if (sizes.empty()) return Error::Ok;
  int type = choose_type(*context, bits, cls);
  if (type < 0) {
    return fail(diag, Error::NotSupported, "vulkan: no %s memory type fits the delegate's buffers",
                cls == MemoryClass::Staging ? "host-visible" : "device");
  }
  const VkMemoryPropertyFlags flags = context->memory_properties().memoryTypes[type].propertyFlags;
  host_visible_ = (flags & kHost) == kHost;

  // Pack buffers into chunks, in order.
  size_t first = 0;
  while (first < buffers_.size()) {
    VkDeviceSize offset = 0;
    size_t last = first;
    std::vector<VkDeviceSize> offsets;
    while (last < buffers_.size()) {
      VkDeviceSize o = align_up(offset, reqs[last].alignment);
      if (last > first && o + reqs[last].size > kChunkBytes) break;
      offsets.push_back(o);
      offset = o + reqs[last].size;
      ++last;
    }
    VkMemoryAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
    ai.allocationSize = offset;
    ai.memoryTypeIndex = static_cast<uint32_t>(type);
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkResult r = vkAllocateMemory(device_, &ai, nullptr, &mem);
    if (r != VK_SUCCESS) {
      if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
        return fail(diag, Error::OutOfMemory,
                    "vulkan: out of %s memory allocating %llu bytes for delegate tensors (%s)",
                    cls == MemoryClass::Staging ? "staging" : "device",
                    static_cast<unsigned long long>(offset), vk_result_name(r));
      }
      return vk_fail(diag, r, "allocating device memory");
    }
    chunks_.push_back(mem);
    total_bytes_ += offset;
    void* base = nullptr;
    if (host_visible_) {
      EMBER_VK_TRY(diag, vkMapMemory(device_, mem, 0, VK_WHOLE_SIZE, 0, &base), "mapping memory");
    }
    for (size_t i = first; i < last; ++i) {
      EMBER_VK_TRY(diag, vkBindBufferMemory(device_, buffers_[i].buffer, mem, offsets[i - first]),
                   "binding buffer memory");
      if (base != nullptr) buffers_[i].mapped = static_cast<uint8_t*>(base) + offsets[i - first];
    }
    first = last;
  }
  return Error::Ok;
}

void BufferSet::reset() {
  for (DeviceBuffer& b : buffers_) {
    if (b.buffer != VK_NULL_HANDLE) vkDestroyBuffer(device_, b.buffer, nullptr);
  }
  for (VkDeviceMemory m : chunks_) vkFreeMemory(device_, m, nullptr);  // unmaps implicitly
  buffers_.clear();
  chunks_.clear();
  host_visible_ = false;
  total_bytes_ = 0;
}

}  // namespace vulkan
}  // namespace ember
