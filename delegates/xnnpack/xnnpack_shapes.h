// Shape inference for the nodes of an XNNPACK partition blob (xnnpack_graph.fbs).
//
// One source of truth for "what does this node produce", used by the runtime (to verify a
// blob before XNNPACK sees it, and to re-derive every internal shape when a bounded dynamic
// input changes) and by the host-side blob builder (to fill in output shapes). Dims are in
// XNNPACK order (NHWC for 4D activations). No allocation, no exceptions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "delegates/xnnpack/xnnpack_graph_generated.h"

namespace ember {
namespace xnnpack {

constexpr uint32_t kMaxDims = 6;  // XNN_MAX_TENSOR_DIMS (XNNPACK 2024)

struct Dims {
  uint32_t rank = 0;
  size_t d[kMaxDims] = {0, 0, 0, 0, 0, 0};

  size_t numel() const {
    size_t n = 1;
    for (uint32_t i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  bool operator==(const Dims& o) const {
    if (rank != o.rank) return false;
    for (uint32_t i = 0; i < rank; ++i) {
      if (d[i] != o.d[i]) return false;
    }
    return true;
  }
  bool operator!=(const Dims& o) const { return !(*this == o); }
};

// Attributes of one node, independent of how they are stored (FlatBuffer or builder).
struct NodeAttrs {
  fb::OpType op = fb::OpType::Copy;
  uint32_t padding[4] = {0, 0, 0, 0};  // top, right, bottom, left
  uint32_t kernel[2] = {1, 1};
  uint32_t stride[2] = {1, 1};
  uint32_t dilation[2] = {1, 1};
  uint32_t adjustment[2] = {0, 0};
  uint32_t groups = 1;
  float output_min = -__builtin_inff();
  float output_max = __builtin_inff();
  float alpha = 0.0f;
  float padding_value = 0.0f;
  const int64_t* new_shape = nullptr;
  size_t new_shape_rank = 0;
  const uint64_t* pre_paddings = nullptr;
  const uint64_t* post_paddings = nullptr;
  size_t num_paddings = 0;
  size_t new_height = 0;
  size_t new_width = 0;
  uint32_t flags = 0;
  const uint64_t* axes = nullptr;  // transpose permutation / reduce axes
  size_t num_axes = 0;
  const uint64_t* offsets = nullptr;  // slice
  const uint64_t* sizes = nullptr;
  size_t num_slice = 0;
  uint32_t axis = 0;  // concatenate
  uint8_t reduce_op = 0;
};

constexpr uint32_t kKeepDimsFlag = 0x40;    // XNN_FLAG_KEEP_DIMS
constexpr uint32_t kTransposeBFlag = 0x1;   // XNN_FLAG_TRANSPOSE_B
// XNN_FLAG_WINOGRAD_CONVOLUTION (third_party/xnnpack/patches/0005): an fp32 3x3 stride-1
// convolution computed as Winograd F(4x4, 3x3), or F(2x2, 3x3) with
// XNN_FLAG_WINOGRAD_2X2_TILES too. Hints: XNNPACK ignores them on any other convolution or
// datatype. The exporter sets them per convolution (exporter/xnnpack_winograd.h).
constexpr uint32_t kWinogradFlag = 0x400;
constexpr uint32_t kWinograd2x2Flag = 0x800;

// Bytes per element of a blob dtype (Fp32, QInt32, QCInt32: 4; QInt8, QCInt8, QDInt8: 1;
// QBInt4: 1, the alignment of its packed bytes, see storage_bytes); 0 when unknown.
inline size_t element_size(fb::DataType t) {
  switch (t) {
    case fb::DataType::Fp32:
    case fb::DataType::QInt32:
    case fb::DataType::QCInt32: return 4;
    case fb::DataType::QInt8:
    case fb::DataType::QCInt8:
    case fb::DataType::QDInt8:
    case fb::DataType::QBInt4: return 1;
  }
  return 0;
}

// Bytes that `numel` elements of dtype `t` occupy: two QBInt4 values share a byte.
inline uint64_t storage_bytes(fb::DataType t, uint64_t numel) {
  return t == fb::DataType::QBInt4 ? (numel + 1) / 2 : numel * element_size(t);
}

// A short, stable name of `op` ("Convolution2d"); "Unknown" when out of range.
const char* op_name(fb::OpType op);

// Number of inputs `op` takes: [min, max] (bias is optional for conv/deconv/fc) and outputs.
void op_arity(fb::OpType op, uint32_t* min_inputs, uint32_t* max_inputs, uint32_t* num_outputs);

// Computes the output dims of a node from its input dims. Returns false (and sets `*why` to
// a static message) when the inputs and attributes are inconsistent.
bool infer_output_dims(const NodeAttrs& attrs, const Dims* inputs, uint32_t num_inputs, Dims* output,
                       const char** why);

// Reads a node's attributes from the blob (pointers refer into the blob). False when an
// attribute vector has the wrong length; `*why` says which.
bool read_node_attrs(const fb::Node& node, NodeAttrs* attrs, const char** why);

}  // namespace xnnpack
}  // namespace ember
