// The "vulkan" backend: runs a partition blob (delegates/vulkan/vulkan_graph.fbs) with
// compute shaders. Linking //delegates/vulkan:vulkan_backend registers it.
//
// Compile specs:
//   "allow_cpu": 1 byte, nonzero = a CPU Vulkan device (lavapipe/SwiftShader) may be used.
// Environment: EMBER_VULKAN_ALLOW_CPU=1 has the same effect for every delegate.
// is_available() is true when any Vulkan device with a compute queue exists; init() fails
// with NotSupported (and a message) when the only device is a CPU one and that is not allowed.
// fp16 blobs (exported with --vulkan-fp16) need 16-bit storage buffers: init() fails with
// NotSupported, saying to re-export without --vulkan-fp16, on a device without them.
#pragma once

#include "runtime/backend/backend.h"

namespace ember {
namespace vulkan {

// The registered instance (also usable without the registry, e.g. in tests).
Backend& vulkan_backend();

// Process-wide switch equivalent to EMBER_VULKAN_ALLOW_CPU=1.
void set_allow_cpu_device(bool allow);

// Whether the device can run fp16 blobs (storageBuffer16BitAccess); false without a device.
// Initialises the Vulkan context (CPU devices count when allowed, see above).
bool fp16_supported();
// Whether fp16 blobs' GEMM convolutions and linear layers run on the device's matrix units
// (VulkanContext::cooperative_matrix_f16); false without a device.
bool coop_matrix_f16_supported();
// Tests: pretend the device lacks 16-bit storage (fp16 blobs then fail init cleanly).
void set_hide_fp16_features(bool hide);

}  // namespace vulkan
}  // namespace ember
