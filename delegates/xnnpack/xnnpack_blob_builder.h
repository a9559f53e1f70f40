// XnnBlobBuilder: host-side writer of XNNPACK partition blobs (xnnpack_graph.fbs), used by
// the exporter's preprocess (delegates/xnnpack/exporter) and by tests. Not linked into the
// runtime.
//
//   XnnBlobBuilder b;
//   uint32_t x = b.input({1, 8, 8, 3}, fb::Layout::NchwToNhwc);   // dims in XNNPACK order
//   XnnNodeParams p; p.padding = {1, 1, 1, 1}; p.kernel = {3, 3}; p.output_min = 0;  // fused relu
//   uint32_t y = b.conv2d_from_oihw(x, weight_oihw, 16, 3, 3, 3, bias, p);
//   b.mark_output(y, fb::Layout::NchwToNhwc);
//   std::vector<uint8_t> blob = b.build();   // empty on error; see error()
//
// Node outputs get their dims from the same shape inference the runtime uses, so a blob the
// builder accepts is one the runtime accepts. Every method returns kInvalidId after the first
// error (and build() returns an empty vector); error() says what went wrong.
//
// Constants are either inline (copied into the blob, 16-byte aligned, followed by
// XNN_EXTRA_BYTES of padding) or references to a constant slot of the delegate (slot, byte
// offset): the exporter lists the slot's Graph constant in DelegateBlob::constants and the
// runtime finds its program segment through the kConstantSegmentsSpec compile spec. The
// slot's bytes must already be in XNNPACK's layout.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "delegates/xnnpack/xnnpack_graph_generated.h"
#include "delegates/xnnpack/xnnpack_shapes.h"

namespace ember {
namespace xnnpack {

constexpr uint32_t kXnnGraphVersion = 1;
constexpr uint32_t kInvalidId = 0xFFFFFFFFu;

struct XnnNodeParams {
  std::array<uint32_t, 4> padding{{0, 0, 0, 0}};  // top, right, bottom, left
  std::array<uint32_t, 2> kernel{{1, 1}};         // height, width
  std::array<uint32_t, 2> stride{{1, 1}};
  std::array<uint32_t, 2> dilation{{1, 1}};
  std::array<uint32_t, 2> adjustment{{0, 0}};
  uint32_t groups = 1;  // depthwise: multiplier; depth_to_space: block size
  float output_min = -std::numeric_limits<float>::infinity();
  float output_max = std::numeric_limits<float>::infinity();
  float alpha = 0.0f;
  float padding_value = 0.0f;
  std::vector<int64_t> new_shape;
  std::vector<uint64_t> pre_paddings;
  std::vector<uint64_t> post_paddings;
  uint64_t new_height = 0;
  uint64_t new_width = 0;
  uint32_t flags = 0;
  std::vector<uint64_t> axes;     // transpose permutation / reduce axes
  std::vector<uint64_t> offsets;  // slice
  std::vector<uint64_t> sizes;    // slice
  uint32_t axis = 0;              // concatenate
  uint8_t reduce_op = 0;          // reduce: 0 sum, 1 mean
};

// Quantization parameters of a non-Fp32 tensor (xnnpack_graph.fbs, table Quantization).
struct XnnQuant {
  float scale = 0.0f;                 // QInt8 / QInt32
  int32_t zero_point = 0;             // QInt8
  std::vector<float> channel_scales;  // QCInt8 / QCInt32 (inline), or:
  int32_t scales_slot = -1;           // a float32 constant slot holding them (channel_scales empty);
                                      // QBInt4: the bfloat16 block scales' slot
  uint64_t scales_offset = 0;
  uint32_t channel_dim = 0;
  uint32_t block_size = 0;            // QBInt4
};

// A tensor exactly as it will be written (for tests that need to write malformed blobs).
struct XnnTensorSpec {
  fb::DataType dtype = fb::DataType::Fp32;
  XnnQuant quant;  // written when dtype != Fp32
  std::vector<uint64_t> dims;
  std::vector<uint64_t> max_dims;
  fb::TensorKind kind = fb::TensorKind::Internal;
  uint32_t external_index = 0;
  fb::Layout layout = fb::Layout::AsIs;
  int32_t segment_index = -1;  // constant slot
  uint64_t segment_offset = 0;
  uint64_t nbytes = 0;
  std::vector<uint8_t> inline_bytes;
};

class XnnBlobBuilder {
 public:
  // External input number `inputs so far`; dims in XNNPACK order (NHWC when layout is
  // NchwToNhwc); max_dims: upper bounds for a bounded dynamic input (empty: static).
  uint32_t input(std::vector<size_t> dims, fb::Layout layout = fb::Layout::AsIs, std::vector<size_t> max_dims = {});
  // Marks a node output as external output number `outputs so far`.
  void mark_output(uint32_t id, fb::Layout layout = fb::Layout::AsIs, std::vector<size_t> max_dims = {});
  // fp32 constant copied into the blob.
  uint32_t constant(std::vector<size_t> dims, const float* data);
  // fp32 constant read in place from the delegate's constant slot `slot` (a program data
  // segment named by exporter::DelegateBlob::constants[slot]) at byte `offset`.
  uint32_t constant_in_slot(std::vector<size_t> dims, int32_t slot, uint64_t offset = 0);
  // Makes tensor `id` (an input or a node output) QInt8 with these parameters.
  void set_qint8(uint32_t id, float scale, int32_t zero_point);
  // Makes node output `id` (a Convert's) QDInt8: int8 quantized per row at run time.
  void set_qdint8(uint32_t id);
  // Quantized constant (QCInt8 / QCInt32 / QInt32 / QInt8) copied into the blob, or read in
  // place from constant slot `slot` at byte `offset` (data == null).
  uint32_t quantized_constant(fb::DataType dtype, std::vector<size_t> dims, const void* data, XnnQuant q);
  uint32_t quantized_constant_in_slot(fb::DataType dtype, std::vector<size_t> dims, XnnQuant q, int32_t slot,
                                      uint64_t offset = 0);
  // Adds a node; returns its output tensor (internal, dims inferred).
  uint32_t node(fb::OpType op, std::vector<uint32_t> inputs, const XnnNodeParams& params = XnnNodeParams());

  // PyTorch-layout convolution: weight [O, I/groups, KH, KW], bias [O] or null. Uses the
  // depthwise node when groups == input channels and I/groups == 1 (permuting the weight to
  // [1, KH, KW, O]); otherwise the generic node (weight permuted to [O, KH, KW, I/groups]).
  // params.kernel and params.groups are set from the arguments. Weights are inline.
  uint32_t conv2d_from_oihw(uint32_t input, const float* weight, size_t out_channels, size_t in_per_group,
                            size_t kernel_h, size_t kernel_w, const float* bias, XnnNodeParams params,
                            uint32_t groups = 1);
  // nn.Linear: weight [O, K], bias [O] or null. Weights are inline.
  uint32_t linear(uint32_t input, const float* weight, size_t out_features, size_t in_features, const float* bias,
                  const XnnNodeParams& params = XnnNodeParams());

  // Quantized (qs8-qc8w) PyTorch-layout convolution / linear on a QInt8 input: int8 weight
  // [O, I/groups, KH, KW] / [O, K] with per-channel scales, int32 bias [O] (scale input_scale
  // * weight_scales[o]) or null; the output is QInt8 (out_scale, out_zero_point). Depthwise
  // exactly as conv2d_from_oihw. Weights are inline (tests; the partitioner uses slots).
  uint32_t qconv2d_from_oihw(uint32_t input, const int8_t* weight, const float* weight_scales, size_t out_channels,
                             size_t in_per_group, size_t kernel_h, size_t kernel_w, const int32_t* bias,
                             float out_scale, int32_t out_zero_point, XnnNodeParams params, uint32_t groups = 1);
  uint32_t qlinear(uint32_t input, const int8_t* weight, const float* weight_scales, size_t out_features,
                   size_t in_features, const int32_t* bias, float out_scale, int32_t out_zero_point,
                   const XnnNodeParams& params = XnnNodeParams());

  // Debug name (.pt2 node name) given to the nodes added from now on; "" for none.
  void set_node_name(std::string name) { node_name_ = std::move(name); }

  // Raw access: written verbatim, no checks (corruption tests).
  uint32_t add_tensor_raw(const XnnTensorSpec& spec);
  void add_node_raw(fb::OpType op, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                    const XnnNodeParams& params);
  void set_counts_raw(uint32_t num_inputs, uint32_t num_outputs) {
    num_inputs_ = num_inputs;
    num_outputs_ = num_outputs;
  }
  void set_version_raw(uint32_t version) { version_ = version; }

  const Dims& dims(uint32_t id) const { return dims_[id]; }
  const XnnTensorSpec& tensor(uint32_t id) const { return tensors_[id]; }
  size_t num_tensors() const { return tensors_.size(); }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  std::vector<uint8_t> build() const;

 private:
  struct NodeSpec {
    fb::OpType op;
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;
    XnnNodeParams params;
    std::string name;
  };
  uint32_t push(const XnnTensorSpec& spec);
  uint32_t set_error(const std::string& message);

  std::vector<XnnTensorSpec> tensors_;
  std::vector<Dims> dims_;
  std::vector<NodeSpec> nodes_;
  std::string node_name_;
  uint32_t num_inputs_ = 0;
  uint32_t num_outputs_ = 0;
  uint32_t version_ = kXnnGraphVersion;
  std::string error_;
};

// Weight layout helpers (PyTorch -> XNNPACK), for float and int8 weights.
template <typename T>
std::vector<T> oihw_to_ohwi(const T* w, size_t o, size_t i, size_t kh, size_t kw) {
  std::vector<T> out(o * i * kh * kw);
  for (size_t a = 0; a < o; ++a)
    for (size_t b = 0; b < i; ++b)
      for (size_t y = 0; y < kh; ++y)
        for (size_t x = 0; x < kw; ++x) out[((a * kh + y) * kw + x) * i + b] = w[((a * i + b) * kh + y) * kw + x];
  return out;
}
// Depthwise weight [O, 1, KH, KW] -> [1, KH, KW, O].
template <typename T>
std::vector<T> depthwise_oihw_to_1hwo(const T* w, size_t o, size_t kh, size_t kw) {
  std::vector<T> out(o * kh * kw);
  for (size_t a = 0; a < o; ++a)
    for (size_t y = 0; y < kh; ++y)
      for (size_t x = 0; x < kw; ++x) out[(y * kw + x) * o + a] = w[(a * kh + y) * kw + x];
  return out;
}
// Attributes of a builder node as the shape inference sees them (pointers into `p`).
NodeAttrs to_attrs(fb::OpType op, const XnnNodeParams& p);

}  // namespace xnnpack
}  // namespace ember
