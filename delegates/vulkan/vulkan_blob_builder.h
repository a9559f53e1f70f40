// VulkanBlobBuilder: writes a Vulkan delegate blob (vulkan_graph.fbs). Used by the exporter's
// Vulkan partitioner and by tests. Host-side (uses the STL freely).
//
//   VulkanBlobBuilder b;
//   int x = b.input({1, 3, 8, 8});
//   int w = b.constant({4, 3, 3, 3}, weights);         // inline bytes, or constant_in_slot()
//   int y = b.conv2d(x, w, -1, {1}, {1}, {1}, 1, VkActivation::relu());
//   b.output(b.softmax(b.view(y, {1, -1}), 1));
//   std::vector<uint8_t> blob = b.build();             // empty when something failed: error()
//
// Shapes are inferred with the runtime's own rules (vulkan_shapes.h). Ops return the new
// tensor id, or -1 after recording the first error (later calls are ignored).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "delegates/vulkan/vulkan_shapes.h"

namespace flatbuffers {
class FlatBufferBuilder;
}

namespace ember {
namespace vulkan {

enum class VkDType : uint8_t { Float32 = 0, Float16 = 1, Int32 = 2, Int64 = 3, Int8 = 4, UInt8 = 5 };
enum class VkBinary : uint8_t { Add = 0, Sub = 1, Mul = 2, Div = 3, SiluMul = 4 /* silu(a) * b */ };
enum class VkUnary : uint8_t {
  Relu = 0, Clamp = 1, Hardtanh = 2, Hardswish = 3, Sigmoid = 4, Silu = 5, Gelu = 6,
  GeluTanh = 7, Tanh = 8,
  Affine = 9,  // x * min + max (min: scale, max: shift)
  Rsqrt = 10, Pow = 11 /* x ^ min */, Sqrt = 12, Exp = 13, Hardsigmoid = 14
};

struct VkActivation {
  bool clamp = false;
  float min = 0, max = 0;
  static VkActivation none() { return {}; }
  static VkActivation clamp_to(float lo, float hi) { return {true, lo, hi}; }
  static VkActivation relu() { return {true, 0.0f, std::numeric_limits<float>::infinity()}; }
  static VkActivation relu6() { return {true, 0.0f, 6.0f}; }
};

class VulkanBlobBuilder {
 public:
  static constexpr float kInf = std::numeric_limits<float>::infinity();

  // --- tensors ---
  // The next input argument of the delegate call.
  int input(const Sizes& sizes, VkDType dtype = VkDType::Float32);
  int constant(const Sizes& sizes, const std::vector<float>& data);
  int constant_bytes(const Sizes& sizes, VkDType dtype, const void* data, size_t nbytes);
  // Bytes read in place at init from the delegate's constant slot `slot` (the program data
  // segment of exporter::DelegateBlob::constants[slot], found through the
  // "ember.constant_segments" compile spec) at `offset`.
  int constant_in_slot(const Sizes& sizes, VkDType dtype, int32_t slot, uint64_t offset = 0);
  // Mutable state kept on the device (fb::TensorKind::State): initial bytes from constant slot
  // `slot`; written in place by attention(). Not an argument of the delegate call.
  int state_in_slot(const Sizes& sizes, VkDType dtype, int32_t slot);
  int state(const Sizes& sizes, const std::vector<float>& initial);  // initial bytes inline
  // Makes a node's result the next delegate output (not an input or constant: copy first).
  void output(int id);
  // The next delegate output is the program's copy of a state the delegate keeps on the device
  // (left alone at run time: Graph.state_outputs).
  void state_output();
  // Marks dims of tensor `id` as the graph's dynamic size (sizes holds its bound there).
  void set_dynamic(int id, const std::vector<uint8_t>& dims);

  // --- ops (bias / weight / optional inputs: -1 when absent) ---
  int conv2d(int x, int weight, int bias, std::vector<int32_t> stride, std::vector<int32_t> padding,
             std::vector<int32_t> dilation, int groups, VkActivation act = {});
  int linear(int x, int weight, int bias, VkActivation act = {});
  // Weight-only quantized linear (LinearParams.weight_bits): weight Int8 [N, K] (bits 8) or
  // UInt8 [N, K / 2] (bits 4, packed), scales float [N, K / group_size].
  int linear_weight_only(int x, int weight, int scales, int bias, int bits, int group_size);
  int matmul(int a, int b);  // matmul / bmm
  int binary(VkBinary op, int a, int b, float alpha = 1.0f);
  int unary(VkUnary op, int x, float min = -kInf, float max = kInf);
  int max_pool2d(int x, std::vector<int32_t> kernel, std::vector<int32_t> stride,
                 std::vector<int32_t> padding, std::vector<int32_t> dilation, bool ceil_mode);
  int avg_pool2d(int x, std::vector<int32_t> kernel, std::vector<int32_t> stride,
                 std::vector<int32_t> padding, bool ceil_mode, bool count_include_pad,
                 int32_t divisor_override = 0);
  int adaptive_avg_pool2d(int x, int64_t out_h, int64_t out_w);
  int softmax(int x, int32_t dim, bool log = false);
  int layer_norm(int x, int weight, int bias, int32_t normalized_ndim, float eps = 1e-5f);
  int mean(int x, std::vector<int64_t> dims, bool keepdim);
  int permute(int x, std::vector<int64_t> perm);
  int view(int x, const Sizes& sizes);  // one -1 allowed
  int expand(int x, const Sizes& sizes);  // PyTorch expand (a broadcast copy)
  int cat(const std::vector<int>& xs, int32_t dim);
  int slice(int x, int32_t dim, int64_t start, int64_t end, int64_t step = 1);
  int embedding(int weight, int indices);
  // Weight-only quantized rows (EmbeddingParams.weight_bits): weight Int8 [V, D] or UInt8
  // [V, D / 2] (packed as linear_weight_only's), scales float [V, D / group_size].
  int embedding_weight_only(int weight, int scales, int indices, int bits, int group_size);
  int rms_norm(int x, int weight, float eps);  // x * rsqrt(mean(x^2, -1) + eps) * weight
  int rope(int x, int cos, int sin);           // rotate-half RoPE (vulkan_graph.fbs RopeParams)
  // KV-cache attention (AttentionParams): k_cache / v_cache are state_in_slot() tensors.
  int attention(int q, int k, int v, int k_cache, int v_cache, int pos, float scale);
  // Attention without a cache in one node (SdpaParams); mask -1: none.
  int sdpa(int q, int k, int v, int mask, float scale);

  // fp16 storage (CompileOptions.fp16; see runtime/fp16_storage.h): inputs/outputs stay
  // float32; weights may be Float16 (constant_bytes / constant_in_slot) or float32.
  void set_fp16(bool fp16) { fp16_ = fp16; }

  const Sizes& sizes(int id) const { return tensors_[static_cast<size_t>(id)].sizes; }
  size_t num_tensors() const { return tensors_.size(); }
  size_t num_inputs() const { return num_inputs_; }
  size_t num_outputs() const { return num_outputs_; }
  size_t num_nodes() const { return nodes_.size(); }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // The blob; empty when an error was recorded.
  std::vector<uint8_t> build() const;

 private:
  struct TensorDef {
    VkDType dtype = VkDType::Float32;
    Sizes sizes;
    uint8_t kind = 0;  // fb::TensorKind
    uint32_t io = 0;
    int32_t segment = -1;
    uint64_t offset = 0;
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> dynamic_dims;
  };
  using ParamsFn = std::function<std::pair<uint8_t, uint32_t>(flatbuffers::FlatBufferBuilder&)>;
  struct NodeDef {
    uint8_t shader;
    ParamsFn params;  // returns (fb::Params type, offset)
    std::vector<int> inputs;
    int output;
  };

  bool check(std::initializer_list<int> ids, bool allow_absent_tail = false);
  bool fail(const std::string& message);
  int add_tensor(TensorDef t);
  int add_node(uint8_t shader, ParamsFn params, std::vector<int> inputs, Sizes out_sizes,
               VkDType dtype = VkDType::Float32);

  std::vector<TensorDef> tensors_;
  std::vector<NodeDef> nodes_;
  size_t num_inputs_ = 0, num_outputs_ = 0;
  std::vector<uint32_t> state_outputs_;
  bool fp16_ = false;
  std::string error_;
};

}  // namespace vulkan
}  // namespace ember
