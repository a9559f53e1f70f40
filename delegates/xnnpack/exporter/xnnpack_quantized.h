// The XNNPACK partitioner's quantized part (internal to delegates/xnnpack/exporter); its op
// table entries are registered by add_quantized_ops (xnnpack_lowering.h).
//
// Claimed: ember_quantized::conv2d (regular, grouped, depthwise) and ::linear with int8
// activations (XNNPACK qs8 with qc8w per-channel weights: QInt8 / QCInt8 / QCInt32 tensors),
// and PT2E's quantized_decomposed::quantize_per_tensor / dequantize_per_tensor (.default, int8,
// full [-128, 127] range) as Convert nodes (f32 <-> qint8). The float ops between Q/DQ are the
// partitioner's ordinary fp32 ops; where XNNPACK has an int8 kernel with PyTorch's reference
// semantics, plan_quantized_fusion() folds the dequantize -> op -> [clamp] -> quantize chain
// into that kernel on the int8 tensors (the Q/DQ nodes become aliases):
//   max_pool2d, cat, relu / relu6 / hardtanh / clamp, view / reshape / flatten (one scale and
//     zero point in and out: exact, the ops only select or move values),
//   add, mul (two dequantized inputs, requantized: XNNPACK's qs8 add / multiply; may differ by
//     one step),
//   mean over H, W / adaptive_avg_pool2d to 1x1 (qs8 mean; may differ by one step).
// Weights: the int8 filter stays a graph constant (OHWI / 1HWO: a new constant replacing
// the OIHW one, or the same bytes for 1x1 filters); the float bias becomes a new int32
// constant round_half_even(bias[o] / (input_scale * weight_scale[o])) (the scale product in
// float, as the portable kernel computes it); the per-channel scales are written into the blob.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace xnnpack {

// Op table entries: add_quantized_ops (xnnpack_lowering.h).

struct QuantizedFusion {
  std::set<int> aliases;  // dequantize / quantize nodes folded into an int8 op: their output aliases their input
  int fused_ops = 0;
};
// Chains of partition `p` that run as one int8 XNNPACK op (see above). `fused_into` maps a
// producer to the clamp folded into it, `folded` holds those clamps.
QuantizedFusion plan_quantized_fusion(const exporter::Graph& g, const exporter::Partition& p,
                                      const std::map<int, int>& fused_into, const std::set<int>& folded);

struct XnnLowering;
// A dequantize / quantize node of QuantizedFusion::aliases: its output aliases its input (a
// quantize gives the int8 op's output its parameters). "" or the error.
std::string alias_folded_qdq(XnnLowering& ctx, const exporter::Node& n);

// Gives the int8 activation `value` its QInt8 parameters, taken from its producer or a reader
// (partition inputs); false when no node says what they are.
bool int8_value_params(const exporter::Graph& g, int value, float* scale, int32_t* zero_point);

}  // namespace xnnpack
}  // namespace ember
