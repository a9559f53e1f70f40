#include "delegates/vulkan/runtime/fp16_storage.h"

#include <cstring>

#include "delegates/vulkan/runtime/vulkan_context.h"
#include "delegates/vulkan/vulkan_fp16.h"
#include "delegates/vulkan/vulkan_graph_generated.h"

namespace ember {
namespace vulkan {

Error require_fp16_storage(const VulkanContext& context, Diagnostic* diag) {
  if (context.storage_buffer16()) return Error::Ok;
  return fail(diag, Error::NotSupported,
              "vulkan: this delegate was exported with --vulkan-fp16, but the device (%s) lacks "
              "16-bit storage buffers (storageBuffer16BitAccess); re-export without --vulkan-fp16",
              context.properties().deviceName);
}

Error prepare_fp16_tensors(std::vector<VulkanGraph::TensorInfo>& tensors, Diagnostic* diag) {
  const uint8_t f32 = static_cast<uint8_t>(fb::DType::Float32), f16 = static_cast<uint8_t>(fb::DType::Float16);
  for (size_t i = 0; i < tensors.size(); ++i) {
    VulkanGraph::TensorInfo& t = tensors[i];
    if (t.dtype == f32) {
      t.fp16 = true;
      t.device_nbytes = t.nbytes / 2;
    } else if (t.dtype == f16) {
      if (t.kind != static_cast<uint8_t>(fb::TensorKind::Constant)) {
        return fail(diag, Error::InvalidProgram,
                    "vulkan blob: tensor %zu is Float16, but only constants may be: an fp16 graph keeps "
                    "float32 inputs, outputs and activations in its tensor table (re-export the model)", i);
      }
      t.dtype = f32;  // logically float32; the constant bytes are fp16 already
      t.fp16 = true;
      t.constant_fp16 = true;
      t.device_nbytes = t.nbytes;
      t.nbytes *= 2;
    }
  }
  return Error::Ok;
}

void use_fp16_shaders(const std::vector<VulkanGraph::TensorInfo>& tensors,
                      std::vector<VulkanGraph::Dispatch>& dispatches) {
  for (VulkanGraph::Dispatch& d : dispatches) {
    if (d.shader == ShaderId::StridedCopy && !tensors[static_cast<size_t>(d.bindings[0])].fp16) continue;
    d.shader = fp16_variant(d.shader);
  }
}

void write_device_bytes(const VulkanGraph::TensorInfo& t, const void* host, void* device) {
  if (t.fp16 && !t.constant_fp16) {
    floats_to_halves(static_cast<const float*>(host), static_cast<uint16_t*>(device), t.device_nbytes / 2);
  } else {
    std::memcpy(device, host, t.device_nbytes);
  }
}

void read_device_bytes(const VulkanGraph::TensorInfo& t, const void* device, void* host) {
  if (t.fp16) {
    halves_to_floats(static_cast<const uint16_t*>(device), static_cast<float*>(host), t.device_nbytes / 2);
  } else {
    std::memcpy(host, device, t.device_nbytes);
  }
}

}  // namespace vulkan
}  // namespace ember
