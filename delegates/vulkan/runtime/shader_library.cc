#include "delegates/vulkan/runtime/shader_library.h"

namespace ember {
namespace vulkan {
namespace {

// Each .inc is a C initializer list of SPIR-V words written by glslc -mfmt=c.
const uint32_t kConv2d[] =
#include "delegates/vulkan/shaders/conv2d.inc"
    ;
const uint32_t kMatmul[] =
#include "delegates/vulkan/shaders/matmul.inc"
    ;
const uint32_t kBinary[] =
#include "delegates/vulkan/shaders/binary.inc"
    ;
const uint32_t kUnary[] =
#include "delegates/vulkan/shaders/unary.inc"
    ;
const uint32_t kPool2d[] =
#include "delegates/vulkan/shaders/pool2d.inc"
    ;
const uint32_t kSoftmax[] =
#include "delegates/vulkan/shaders/softmax.inc"
    ;
const uint32_t kLayerNorm[] =
#include "delegates/vulkan/shaders/layer_norm.inc"
    ;
const uint32_t kReduceMean[] =
#include "delegates/vulkan/shaders/reduce_mean.inc"
    ;
const uint32_t kStridedCopy[] =
#include "delegates/vulkan/shaders/strided_copy.inc"
    ;
const uint32_t kEmbedding[] =
#include "delegates/vulkan/shaders/embedding.inc"
    ;
const uint32_t kRope[] =
#include "delegates/vulkan/shaders/rope.inc"
    ;
const uint32_t kAttention[] =
#include "delegates/vulkan/shaders/attention.inc"
    ;
const uint32_t kEmbeddingWq[] =
#include "delegates/vulkan/shaders/embedding_wq.inc"
    ;
const uint32_t kLinearWq[] =
#include "delegates/vulkan/shaders/linear_wq.inc"
    ;
const uint32_t kConv2dGemm[] =
#include "delegates/vulkan/shaders/conv2d_gemm.inc"
    ;
const uint32_t kSdpa[] =
#include "delegates/vulkan/shaders/sdpa.inc"
    ;

const uint32_t kConv2dFp16[] =
#include "delegates/vulkan/shaders/conv2d_fp16.inc"
    ;
const uint32_t kMatmulFp16[] =
#include "delegates/vulkan/shaders/matmul_fp16.inc"
    ;
const uint32_t kBinaryFp16[] =
#include "delegates/vulkan/shaders/binary_fp16.inc"
    ;
const uint32_t kUnaryFp16[] =
#include "delegates/vulkan/shaders/unary_fp16.inc"
    ;
const uint32_t kPool2dFp16[] =
#include "delegates/vulkan/shaders/pool2d_fp16.inc"
    ;
const uint32_t kSoftmaxFp16[] =
#include "delegates/vulkan/shaders/softmax_fp16.inc"
    ;
const uint32_t kLayerNormFp16[] =
#include "delegates/vulkan/shaders/layer_norm_fp16.inc"
    ;
const uint32_t kReduceMeanFp16[] =
#include "delegates/vulkan/shaders/reduce_mean_fp16.inc"
    ;
const uint32_t kStridedCopyFp16[] =
#include "delegates/vulkan/shaders/strided_copy_fp16.inc"
    ;
const uint32_t kEmbeddingFp16[] =
#include "delegates/vulkan/shaders/embedding_fp16.inc"
    ;
const uint32_t kRopeFp16[] =
#include "delegates/vulkan/shaders/rope_fp16.inc"
    ;
const uint32_t kAttentionFp16[] =
#include "delegates/vulkan/shaders/attention_fp16.inc"
    ;
const uint32_t kEmbeddingWqFp16[] =
#include "delegates/vulkan/shaders/embedding_wq_fp16.inc"
    ;
const uint32_t kLinearWqFp16[] =
#include "delegates/vulkan/shaders/linear_wq_fp16.inc"
    ;
const uint32_t kConv2dGemmFp16[] =
#include "delegates/vulkan/shaders/conv2d_gemm_fp16.inc"
    ;
const uint32_t kSdpaFp16[] =
#include "delegates/vulkan/shaders/sdpa_fp16.inc"
    ;
const uint32_t kConv2dGemmCoopFp16Spirv[] =
#include "delegates/vulkan/shaders/conv2d_gemm_coop_fp16.inc"
    ;

#define EMBER_SHADER(name, var, bindings, push, outputs) \
  ShaderInfo{name, var, sizeof(var) / sizeof(var[0]), bindings, push, outputs}

const ShaderInfo kShaders[kNumShaders] = {
    EMBER_SHADER("conv2d", kConv2d, 4, 0, 1),
    EMBER_SHADER("matmul", kMatmul, 4, 0, 1),
    EMBER_SHADER("binary", kBinary, 3, 112, 1),
    EMBER_SHADER("unary", kUnary, 2, 4, 1),
    EMBER_SHADER("pool2d", kPool2d, 2, 0, 1),
    EMBER_SHADER("softmax", kSoftmax, 2, 0, 1),
    EMBER_SHADER("layer_norm", kLayerNorm, 4, 0, 1),
    EMBER_SHADER("reduce_mean", kReduceMean, 2, 0, 1),
    EMBER_SHADER("strided_copy", kStridedCopy, 2, 112, 1),
    EMBER_SHADER("embedding", kEmbedding, 3, 0, 1),
    EMBER_SHADER("rope", kRope, 4, 0, 1),
    EMBER_SHADER("attention", kAttention, 11, 0, 3),
    EMBER_SHADER("linear_wq", kLinearWq, 13, 0, 3),
    EMBER_SHADER("embedding_wq", kEmbeddingWq, 4, 0, 1),
    EMBER_SHADER("conv2d_gemm", kConv2dGemm, 11, 112, 2),
    EMBER_SHADER("sdpa", kSdpa, 5, 100, 1),
    // fp16-storage variants, same order (kFp16Offset + id).
    EMBER_SHADER("conv2d_fp16", kConv2dFp16, 4, 0, 1),
    EMBER_SHADER("matmul_fp16", kMatmulFp16, 4, 0, 1),
    EMBER_SHADER("binary_fp16", kBinaryFp16, 3, 112, 1),
    EMBER_SHADER("unary_fp16", kUnaryFp16, 2, 4, 1),
    EMBER_SHADER("pool2d_fp16", kPool2dFp16, 2, 0, 1),
    EMBER_SHADER("softmax_fp16", kSoftmaxFp16, 2, 0, 1),
    EMBER_SHADER("layer_norm_fp16", kLayerNormFp16, 4, 0, 1),
    EMBER_SHADER("reduce_mean_fp16", kReduceMeanFp16, 2, 0, 1),
    EMBER_SHADER("strided_copy_fp16", kStridedCopyFp16, 2, 112, 1),
    EMBER_SHADER("embedding_fp16", kEmbeddingFp16, 3, 0, 1),
    EMBER_SHADER("rope_fp16", kRopeFp16, 4, 0, 1),
    EMBER_SHADER("attention_fp16", kAttentionFp16, 11, 0, 3),
    EMBER_SHADER("linear_wq_fp16", kLinearWqFp16, 13, 0, 3),
    EMBER_SHADER("embedding_wq_fp16", kEmbeddingWqFp16, 4, 0, 1),
    EMBER_SHADER("conv2d_gemm_fp16", kConv2dGemmFp16, 11, 112, 2),
    EMBER_SHADER("sdpa_fp16", kSdpaFp16, 5, 100, 1),
    EMBER_SHADER("conv2d_gemm_coop_fp16", kConv2dGemmCoopFp16Spirv, 11, 112, 2),
};

}  // namespace

const ShaderInfo& shader_info(ShaderId id) { return kShaders[static_cast<int>(id)]; }

std::string shader_label(ShaderId id, const std::vector<uint32_t>& spec) {
  std::string s = shader_info(id).name;
  s += "(";
  for (size_t i = 0; i < spec.size(); ++i) s += (i ? "," : "") + std::to_string(static_cast<int32_t>(spec[i]));
  return s + ")";
}

}  // namespace vulkan
}  // namespace ember
