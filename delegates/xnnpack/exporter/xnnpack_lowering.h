// The XNNPACK partitioner's op table (internal to delegates/xnnpack/exporter): one entry per
// aten / ember operator, declared once in a family file under ops/, each with its check (why
// XNNPACK cannot take a node, "" when it can), its lower (the blob nodes it becomes) and its
// traits (layout, bounded shapes, fusions). xnnpack_partitioner.cc's unsupported_reason(),
// claim() and preprocess() are generic loops over this table.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_winograd.h"
#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/delegate_op_table.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace xnnpack {

// Which layout a node needs inside a partition. 4D activations are NHWC where spatial ops
// (conv, pooling, resize, prelu: XNNPACK's conventions) make or need them and in PyTorch's
// order where ops that index dims (matmul, permute, slice, softmax, reductions, ...) do;
// elementwise ops run in the layout of their inputs (kAnyLayout). The values are bits: a
// group's members OR theirs together.
enum LayoutNeed { kAnyLayout = 0, kNhwcLayout = 1, kLogicalLayout = 2 };

// Bounded dynamic shapes: XNNPACK re-derives a node's shapes at run time (xnn_reshape_runtime)
// only for these ops; weights fix the last dim of linear / layer_norm, softmax indexes it.
enum class ShapeSupport { kStaticOnly, kBounded, kBoundedStaticLastDim };

// dequantize -> op -> [clamp] -> quantize chains the op's int8 XNNPACK kernel runs
// (xnnpack_quantized.cc, plan_quantized_fusion).
enum class Int8Fusion {
  kNone,
  kExact,  // one scale and zero point in and out: the op only selects or moves values
  kAdd,    // two dequantized operands, requantized (qs8 add)
  kMul,    // qs8 multiply: requantized with the product of the input scales
  kMean,   // qs8 mean over H, W
};

// Decides the layout of a node that reads or writes a 4D tensor (null: kLogicalLayout).
using LayoutRule = LayoutNeed (*)(const exporter::Graph& g, const exporter::Node& n);
// The [lo, hi] output range of a clamp-like op (lo / hi start at -inf / +inf).
using OutputRange = void (*)(const exporter::Node& n, float* lo, float* hi);

struct XnnOpTraits {
  LayoutRule layout = nullptr;
  ShapeSupport shapes = ShapeSupport::kStaticOnly;
  // The float ops: every tensor operand is float32 (xnnpack_partitioner.cc checks it before
  // the entry's check). Quantized entries check their own dtypes and keep one layout.
  bool quantized = false;
  bool tensor_list_input = false;  // cat: a list of static float32 tensors
  bool several_outputs = false;    // unbind
  OutputRange clamp = nullptr;     // clamp-like: may fold into its producer's output range
  bool takes_fused_clamp = false;  // a producer a following clamp may fold into
  bool reshape = false;            // a group of reshapes alone is not worth a delegate call
  Int8Fusion int8 = Int8Fusion::kNone;
};

LayoutNeed nhwc_layout(const exporter::Graph& g, const exporter::Node& n);  // spatial ops
LayoutNeed any_layout(const exporter::Graph& g, const exporter::Node& n);   // elementwise ops

// What lowering one partition needs: the graph, the blob being built, graph value -> blob
// tensor, the layout each 4D activation is stored in. While checking (unsupported_reason)
// only `g` is set.
struct XnnLowering {
  explicit XnnLowering(const exporter::Graph& graph) : g(graph) {}

  const exporter::Graph& g;
  XnnBlobBuilder* b = nullptr;
  exporter::ConstantSlots* slots = nullptr;
  std::map<int, uint32_t> id;          // graph value -> blob tensor
  std::set<int> stored_nhwc;           // 4D activations stored NHWC
  std::map<std::pair<int, bool>, uint32_t> converted;  // (value, to NHWC) -> transposed copy

  // The node being lowered: the layout it runs in, the output range of a clamp folded into
  // it (in `params`, which lowerings start from), and the blob tensor of its first output.
  bool nhwc = false;
  XnnNodeParams params;
  // Which fp32 convolutions run in the Winograd domain (xnnpack_winograd.h); the partitioner's
  // option.
  WinogradMode winograd = WinogradMode::kAuto;
  uint32_t result = kInvalidId;

  // The mapped blob tensor of activation v (kInvalidId when v is null or unmapped).
  uint32_t input(const exporter::Value* v) const;
  // v's dims in the layout the node runs in (NHWC order for 4D tensors when nhwc).
  std::vector<size_t> dims(const exporter::Value& v, bool in_nhwc) const;
  // A graph constant used as is (in place from its program segment), with XNNPACK dims.
  uint32_t existing(const exporter::Value* v, std::vector<size_t> dims);
  // A constant whose bytes had to be transformed: a new graph constant replacing v (or v itself
  // when the transform left the bytes unchanged, e.g. 1x1 conv filters).
  uint32_t transformed(const exporter::Value* v, const char* suffix, std::vector<size_t> dims,
                       const std::vector<float>& data);
  // An operand in PyTorch's order (ops that only run on tensors that are not NHWC): the mapped
  // activation or the constant as is.
  uint32_t plain(const exporter::Value* v);
  // An operand of an elementwise op: constants are broadcast into NHWC when the output is 4D.
  uint32_t operand(const exporter::Value* v, bool out4d);
};

using XnnOpTable = exporter::DelegateOpTable<XnnLowering, XnnOpTraits>;
using XnnOpEntry = XnnOpTable::Entry;

// The table, built once from the family files.
const XnnOpTable& xnnpack_op_table();
// The traits of n's entry (default traits when the table has none).
const XnnOpTraits& op_traits(const exporter::Node& n);

// Family files (ops/*.cc, xnnpack_quantized.cc, xnnpack_weight_only.cc).
void add_convolution_pooling_ops(XnnOpTable& t);
void add_elementwise_ops(XnnOpTable& t);
void add_normalization_ops(XnnOpTable& t);
void add_matmul_attention_ops(XnnOpTable& t);
void add_shape_ops(XnnOpTable& t);
void add_quantized_ops(XnnOpTable& t);
void add_weight_only_ops(XnnOpTable& t);

// Sets prm's output range to that of clamp-like node n (traits.clamp): lowering n itself, or
// folding it into its producer.
void clamp_output_range(const exporter::Node& n, XnnNodeParams* prm);
// Global average pooling over H, W (adaptive_avg_pool2d to 1x1, mean over H, W in NHWC).
std::string lower_global_average_pooling(XnnLowering& ctx, const exporter::Node& n);

// A one-element inline constant of `rank` dims (all 1), broadcast against any operand.
uint32_t scalar_constant(XnnBlobBuilder& b, size_t rank, float value);

}  // namespace xnnpack
}  // namespace ember
