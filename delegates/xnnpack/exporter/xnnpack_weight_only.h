// The XNNPACK partitioner's weight-only quantized linear layers (internal to
// delegates/xnnpack/exporter).
//
// Claimed: ember_quantized::linear_weight_only (float activations, int8 per-channel or int4
// group-wise weights; kernels/portable/quantized/weight_only_ops.cc has the semantics) as
// XNNPACK's dynamically quantized fully connected:
//   Convert(Fp32 -> QDInt8)  the activations quantized to int8 per row at run time
//   FullyConnected           qd8-f32-qc8w (int8 weights, one scale per output channel) or
//                            qd8-f32-qb4w (int4 weights, block size = the group size, a
//                            multiple of 32 dividing K), optional float bias, Fp32 output.
// Weights stay where they are: the int8 / packed int4 bytes are the operator's own constant
// (the packings agree: element 2j in the low nibble, stored + 8, XNNPACK's zero point 8),
// int8 scales are read in place; int4 block scales become a new bfloat16 constant (XNNPACK's
// qb4w takes bfloat16 scales; rounded to nearest even, exact for the scales Ember's own
// quantizer writes, which are bfloat16 values already).
// PT2E's dynamic activation quantization in front of such layers folds into them (see
// DynamicChain below).
// Numerics: not bit-identical to the portable kernel (XNNPACK rounds the activations to int8
// per row; the portable kernel computes in float for prefill and quantizes per block of 32
// for decode); the relative error this adds is measured by
// //test/delegates/xnnpack:xnnpack_weight_only_test.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace xnnpack {

// Op table entries (add_weight_only_ops, xnnpack_lowering.h): ember_quantized::
// linear_weight_only.default, and the nodes of PT2E's dynamic activation quantization in front
// of it (choose_qparams.tensor, quantize_per_tensor.tensor, dequantize_per_tensor.tensor).
//
// PT2E's dynamically quantized activation in front of weight-only linear layers:
//   (scale, zp) = choose_qparams.tensor(x, -128, 127, eps, int8)
//   dq = dequantize_per_tensor.tensor(quantize_per_tensor.tensor(x, scale, zp), scale, zp)
//   linear_weight_only(dq, ...) [, linear_weight_only(dq, ...) ...]
// XNNPACK's qd8 fully connected quantizes its input itself (one scale and zero point per row,
// where PyTorch's choose_qparams takes one per tensor; the same for a decoded token), so the
// three nodes fold away: their outputs alias x. True (and the node indices) when node `n` is
// one of the three and the whole chain lowers.
struct DynamicChain {
  int choose = -1, quantize = -1, dequantize = -1;
};
bool dynamic_activation_chain(const exporter::Graph& g, const exporter::Node& n, DynamicChain* chain);

struct XnnLowering;
// When n belongs to a DynamicChain it is folded away here (its output aliases x) and true is
// returned (*error says why that failed, else stays empty); false for any other node.
bool fold_dynamic_activation(XnnLowering& ctx, const exporter::Node& n, std::string* error);

}  // namespace xnnpack
}  // namespace ember
