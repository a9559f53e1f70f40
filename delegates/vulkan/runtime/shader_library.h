// The compute shaders, compiled to SPIR-V at build time (glslc, see BUILD) and embedded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace vulkan {

// Ids 0..11 match fb::Shader (never cast: the lowering names each dispatch's shader); kFp16Offset + id is the same shader compiled with
// -DSTORAGE_FP16 (float16_t storage buffers, fp32 arithmetic; see fp16_storage.h). After those,
// kConv2dGemmCoopFp16: conv2d_gemm.comp's matrix-unit variant for fp16 graphs (VK_NV_cooperative_matrix).
enum class ShaderId : uint8_t {
  Conv2d = 0, Matmul = 1, Binary = 2, Unary = 3, Pool2d = 4, Softmax = 5, LayerNorm = 6,
  ReduceMean = 7, StridedCopy = 8, Embedding = 9, Rope = 10, Attention = 11,
  LinearWq = 12,  // a dispatch of Matmul nodes with quantized weights (LinearParams.weight_bits)
  EmbeddingWq = 13,  // of Embedding nodes with quantized weights (EmbeddingParams.weight_bits)
  Conv2dGemm = 14,   // of Conv2d nodes as an implicit GEMM (conv_gemm_plan.h)
  Sdpa = 15,         // of Sdpa nodes (fb::Shader::Sdpa is 12: runtime ids from 12 on are their own)
  Conv2dGemmCoopFp16 = 32,  // kConv2dGemmCoopFp16 (checked below)
};
constexpr int kNumBaseShaders = 16;
constexpr int kFp16Offset = kNumBaseShaders;
// conv2d_gemm.comp with -DSTORAGE_FP16 -DCOOP_MATRIX: fp16 tiles multiplied by the subgroups'
// matrix units (fp32 sums). Only fp16 graphs on devices with
// VulkanContext::cooperative_matrix_f16() use it (fp16_storage.h), for the GEMM phase.
constexpr int kConv2dGemmCoopFp16 = 2 * kNumBaseShaders;
constexpr int kNumShaders = 2 * kNumBaseShaders + 1;

static_assert(static_cast<int>(ShaderId::Conv2dGemmCoopFp16) == kConv2dGemmCoopFp16, "the coop variant's id");

// The fp16-storage variant of a base shader (identity for a variant already).
inline ShaderId fp16_variant(ShaderId id) {
  int i = static_cast<int>(id);
  return static_cast<ShaderId>(i < kFp16Offset ? i + kFp16Offset : i);
}

struct ShaderInfo {
  const char* name;              // "conv2d", "conv2d_fp16", ...
  const uint32_t* spirv;
  size_t spirv_words;
  // Storage buffers at bindings 0..n-1 of set 0 (<= kMaxBindings). A shader writes its last
  // num_outputs bindings and only reads the others: the runtime places barriers by that rule
  // (vulkan_graph.cc), test/delegates/vulkan:shader_bindings_test checks it in the SPIR-V.
  uint32_t num_bindings;
  uint32_t push_constant_bytes;  // 0: none
  uint32_t num_outputs;          // 1..num_bindings
};

const ShaderInfo& shader_info(ShaderId id);

// "conv2d(1,64,56,...)": the shader's name and its specialisation constants as int32 (float
// constants as their bit patterns), for profiles (the dispatch report, pipeline creation times).
std::string shader_label(ShaderId id, const std::vector<uint32_t>& spec);

// The most storage buffers a shader binds (linear_wq.comp's 13); sizes the hosts' fixed arrays.
constexpr uint32_t kMaxBindings = 13;

// Workgroup size (local_size_x, specialization constant 0) used for every dispatch.
constexpr uint32_t kWorkgroupSize = 64;

}  // namespace vulkan
}  // namespace ember
