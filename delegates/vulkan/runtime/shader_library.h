// The compute shaders, compiled to SPIR-V at build time (glslc, see BUILD) and embedded.
// Numeric ids match fb::Shader in vulkan_graph.fbs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {
namespace vulkan {

enum class ShaderId : uint8_t {
  Conv2d = 0, Matmul = 1, Binary = 2, Unary = 3, Pool2d = 4, Softmax = 5, LayerNorm = 6,
  ReduceMean = 7, StridedCopy = 8, Embedding = 9,
};
constexpr int kNumShaders = 10;

struct ShaderInfo {
  const char* name;
  const uint32_t* spirv;
  size_t spirv_words;
  uint32_t num_bindings;         // storage buffers at bindings 0..n-1 of set 0
  uint32_t push_constant_bytes;  // 0: none
};

const ShaderInfo& shader_info(ShaderId id);

// Workgroup size (local_size_x, specialization constant 0) used for every dispatch.
constexpr uint32_t kWorkgroupSize = 64;

}  // namespace vulkan
}  // namespace ember
