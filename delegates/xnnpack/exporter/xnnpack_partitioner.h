// The XNNPACK partitioner: claims maximal convex groups of connected fp32, static-shape nodes
// that XNNPACK runs, and serialises each group into an XNNPACK blob (xnnpack_graph.fbs).
//
// Claimed ops: aten::conv2d / aten::convolution (2D, not transposed; grouped and depthwise;
// bias), linear, addmm / mm with a constant weight, relu / relu6 / hardtanh / clamp (fused
// into the producer's output range when it is a conv/linear/pool/add/sub/mul/div in the same
// group), max_pool2d, avg_pool2d (no ceil_mode/divisor_override; padding 0
// or count_include_pad=False), adaptive_avg_pool2d to 1x1 and mean over H,W with keepdim
// (global average pooling), add/sub/mul/div (Tensor, broadcasting; alpha == 1),
// sigmoid, hardswish, silu (sigmoid + multiply), hardsigmoid (multiply + add with clamp),
// max_pool2d with ceil_mode (as extra bottom/right padding), softmax / _softmax over the last dim (not 4D), prelu, constant_pad_nd,
// view / reshape / _unsafe_view / flatten, upsample_bilinear2d; the transformer ops: bmm /
// matmul, permute / transpose, slice / select / unbind, cat, expand, repeat_interleave,
// layer_norm, gelu, softmax, mean / sum, scaled_dot_product_attention (composed in the blob);
// group_norm (composed, in either layout), conv_transpose2d (deconvolution) and sin / cos for
// diffusion UNets.
// Quantized programs (xnnpack_quantized.h): ember_quantized::conv2d / linear with int8
// activations as XNNPACK's qs8-qc8w kernels, quantize/dequantize_per_tensor as Convert nodes,
// and dequantize -> max_pool2d / cat / clamp / reshape / add / mul / mean -> quantize chains
// folded into XNNPACK's int8 kernels; int8 tensors may cross the partition boundary.
// Each op's check, lowering and traits are one entry of the op table (xnnpack_lowering.h;
// family files in ops/); this class runs the loops over it.
// In-place writes must have been made SSA first (exporter::make_activations_ssa; the
// exporter does this whenever partitioners are given).
//
// Layout, per 4D tensor: NHWC where spatial ops (conv, pooling, resize, prelu) make or need
// it, PyTorch's order where ops that index dims (matmul, permute, softmax, reductions, ...)
// do; elementwise ops follow their inputs. Where the two meet the blob reads the tensor
// through a transpose (one per tensor and direction), so an fp32 group may hold both kinds;
// groups with quantized ops keep one layout. Group inputs/outputs stored NHWC use layout
// NchwToNhwc (the runtime transposes at the boundary). Constants are permuted ahead of time
// (conv weights to OHWI / 1HWO, 4D elementwise constants to NHWC).
//
// Weights: never call arguments and never copied into the blob. Each weight is a constant
// slot (exporter::DelegateBlob::constants) the runtime reads in place from the program's data
// segment; a weight XNNPACK needs in another layout (conv filters OIHW -> OHWI / 1HWO, mm
// weights transposed, 4D elementwise constants NCHW -> NHWC) becomes a new graph constant
// holding the permuted bytes (exporter::ConstantSlots::add), which replaces the original
// (emitted only if another node still reads it).
//
// Compile specs (delegates/xnnpack/xnnpack_compile_specs.h): exporter::kSummarySpec (the
// claimed ops, for `ember inspect`); when num_threads > 0, "num_threads" (a fallback used only
// when the method has no pthreadpool); with fp16, "fp16"; "conv_block_bytes" when given.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "delegates/xnnpack/exporter/xnnpack_winograd.h"
#include "delegates/xnnpack/xnnpack_compile_specs.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/partitioner.h"

namespace ember {
namespace xnnpack {

class XnnpackPartitioner final : public exporter::Partitioner {
 public:
  // num_threads > 0 is written as the "num_threads" compile spec, fp16 as "fp16",
  // conv_block_bytes >= 0 as "conv_block_bytes" (< 0: not written, the runtime's default).
  // winograd: which fp32 convolutions run in the Winograd domain (exporter/xnnpack_winograd.h).
  explicit XnnpackPartitioner(int num_threads = 0, bool fp16 = false, int64_t conv_block_bytes = -1,
                              WinogradMode winograd = WinogradMode::kAuto)
      : num_threads_(num_threads), fp16_(fp16), conv_block_bytes_(conv_block_bytes), winograd_(winograd) {}
  std::string backend_id() const override { return "xnnpack"; }
  std::vector<std::vector<int>> claim(const exporter::Graph& g) override;
  absl::StatusOr<exporter::DelegateBlob> preprocess(const exporter::Graph& g, const exporter::Partition& p) override;

  // Why node `index` is not supported ("" when it is); for "which ops went where" reports.
  static std::string unsupported_reason(const exporter::Graph& g, int index);

 private:
  int num_threads_;
  bool fp16_;
  int64_t conv_block_bytes_;
  WinogradMode winograd_;
};

}  // namespace xnnpack
}  // namespace ember
