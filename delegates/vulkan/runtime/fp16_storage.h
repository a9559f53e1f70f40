// fp16 storage for Vulkan graphs exported with --vulkan-fp16 (blob CompileOptions.fp16).
//
// What changes in an fp16 graph:
//   - Every float tensor lives on the device as IEEE binary16 (half the memory and bandwidth).
//     Int32/Int64 tensors (embedding indices) are unchanged.
//   - The delegate boundary stays float32: execute() converts inputs float32 -> fp16 while
//     writing them into the mapped device (or staging) buffer and outputs fp16 -> float32 while
//     reading them back, so the rest of the program is unchanged. No allocation.
//   - Weights: the exporter stores them as Float16 constants in the program's data segments
//     (half the file size); they are uploaded as they are. Float32 constants (inline constants
//     written by tests or older tools) are converted at init.
//   - Dispatches use the *_fp16 shader variants (shaders compiled with -DSTORAGE_FP16): loads
//     widen to fp32, arithmetic and accumulation (conv, matmul, softmax, layer_norm, pooling,
//     mean) are fp32, stores round to fp16. So the device needs storageBuffer16BitAccess only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "delegates/vulkan/runtime/vulkan_graph.h"
#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

class VulkanContext;

// NotSupported, with a message saying to re-export without --vulkan-fp16, when the device
// lacks storageBuffer16BitAccess.
Error require_fp16_storage(const VulkanContext& context, Diagnostic* diag);

// Runs after the tensor table is parsed and before nodes are lowered: marks every float tensor
// as fp16 on the device (TensorInfo::fp16, device_nbytes halved) and turns Float16 constants
// into logical Float32 tensors whose constant bytes are already fp16 (constant_fp16).
// InvalidProgram for a Float16 input, output or activation (the boundary is float32).
Error prepare_fp16_tensors(std::vector<VulkanGraph::TensorInfo>& tensors, Diagnostic* diag);

// Runs after lowering: switches each dispatch to its fp16 shader variant. A strided copy of a
// 4-byte integer tensor keeps the 32-bit copy shader.
void use_fp16_shaders(const std::vector<VulkanGraph::TensorInfo>& tensors,
                      std::vector<VulkanGraph::Dispatch>& dispatches);

// Host -> device bytes of tensor `t` (device_nbytes written to `device`). `host` holds the
// delegate argument (t.nbytes bytes, float32 when t.fp16) or, for a constant, t.constant.
void write_device_bytes(const VulkanGraph::TensorInfo& t, const void* host, void* device);
// Device -> host: t.device_nbytes from `device`, t.nbytes (float32 when t.fp16) to `host`.
void read_device_bytes(const VulkanGraph::TensorInfo& t, const void* device, void* host);

}  // namespace vulkan
}  // namespace ember
