// Graph passes. Each returns the number of changes it made (or an error).
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

// Canonicalisation for inference:
//  - identity ops removed (dropout variants, alias, detach, contiguous, lift_fresh_copy,
//    clone/to/_to_copy that change nothing, positive, resolve_conj/neg);
//  - no-op assertions removed (_assert_scalar, _assert_tensor_metadata, _assert_async);
//  - in-place ops (`index_copy_`, `add_`, `relu_`, ...) become their functional op writing
//    into `self` (out = self); a mutated constant buffer becomes MutableState.
absl::StatusOr<int> canonicalize(Graph& g);

// Rewrites composite (training-IR) ops into core ATen ops where `has_kernel("aten::op.overload")`
// is false for the composite op and true for every op of its replacement: losses (mse, l1,
// smooth_l1, huber, soft_margin, kl_div, margin_ranking, binary_cross_entropy[_with_logits],
// hinge_embedding, poisson_nll, triplet_margin, nll_loss_nd / cross_entropy without class
// weights), pairwise_distance, cosine_similarity, outer, inner, vdot, tensordot, kron, addr,
// sum_to_size, rot90, adaptive_{avg,max}_pool1d, conv_transpose1d, native_dropout_backward,
// _softmax_backward_data, upsample_nearest1d / _upsample_nearest_exact1d. Nodes with dynamic
// shapes are left alone.
absl::StatusOr<int> decompose_composites(Graph& g, const std::function<bool(const std::string&)>& has_kernel);

// Runs every node whose inputs are all constants (static shapes, deterministic op, a kernel
// linked in) through its portable kernel at export time; its outputs become constants.
// Skips folds that would grow the program by more than 2x the inputs + 64 KB.
absl::StatusOr<int> fold_constants(Graph& g);

// Lowers PT2E quantized chains, dequantize_per_tensor(a) and dequantize_per_channel(int8
// constant weight) -> conv2d / convolution (2-D) / linear -> [activation] -> quantize_per_tensor,
// to ember_quantized::conv2d / ::linear on the int8 tensors (integer sums, the weights kept as
// int8 constants). Run before constant folding (which would turn the weights' dequantize into
// float constants). Chains that do not fit stay as float ops between Q/DQ.
int lower_quantized_ops(Graph& g);

// Lowers weight-only layers (dequantize_per_channel / _group of a constant int8 weight read
// only by linear and embedding nodes, what `--quantize int8-weight|int4-weight` writes) to
// ember_quantized::linear_weight_only / embedding_weight_only, packing int4 values two per
// byte. Run before constant folding. Returns the number of weights lowered.
int lower_weight_only_ops(Graph& g);

// True for an activation lower_quantized_ops folds into a quantized layer's output range:
// relu, relu6, hardtanh(lo, hi), clamp with number bounds; sets its real bounds (+-inf open).
bool fusable_activation(const Node& n, double* lo, double* hi);

// Rewrites the Llama decoder patterns into Ember's fused ember_llm:: operators
// (kernels/optimized/llm_kernels.cc), each only on an exact match (ops, constant arguments,
// float32, static sizes, no outside reader of an intermediate) and only when
// `has_kernel("ember_llm::<op>.default")`: the KV-cache update (index_copy / index_put into
// mutable state) + [repeat_interleave] + scaled_dot_product_attention with the constant
// causal[input_pos] mask -> sdpa_with_kv_cache; the RMSNorm chain (pow, mean, add eps, rsqrt,
// mul, mul weight) -> rms_norm; RoPE in rotate_half form (slice, neg, cat, mul cos/sin, add)
// -> rope; mul(silu(a), b) -> silu_mul. Returns the number of rewrites; run after constant
// folding, then DCE (the mask and repeat nodes go).
// `others_need_attention`: fuse RMSNorm / RoPE / SwiGLU only in a graph whose KV-cache
// attention was fused. The exporter sets it when a delegate partitioner runs: a delegate
// takes those patterns as composites, so fusing them into portable operators would only cut
// its partitions, unless the portable attention cuts them at every layer anyway.
int fuse_llm_attention(Graph& g, const std::function<bool(const std::string&)>& has_kernel,
                       bool others_need_attention = false);

// Removes nodes whose outputs are unused and that write nothing in place.
int eliminate_dead_code(Graph& g);

// Folds eval-mode batch norm following a (non-transposed) convolution whose weight, bias and
// the BN parameters are constants: the BN disappears, the conv gets new constant weight/bias.
absl::StatusOr<int> fold_conv_batch_norm(Graph& g);

// Gives each in-place write to an activation (a functional op writing into `self`, left by
// canonicalize, e.g. relu_ -> relu with out = self) a new value, renaming later reads, graph
// outputs and write-backs, so every activation has one producer. Run before partitioning:
// partitioners reason about producers and partition inputs/outputs. Writes into state are
// left alone; an in-place write into a user input gets a new value too, and the input's
// last version is written back into it (a write-back, copied by finalize_outputs).
int make_activations_ssa(Graph& g);

// Puts `where(mask, 0, -inf)` (float32) in front of each scaled_dot_product_attention whose
// attn_mask is boolean, so the attention reads an additive mask. Same result; the attention
// itself then fits delegates that take float tensors only (the Vulkan one), while the cheap
// conversion stays on the portable kernels. Run before partitioning.
int make_attention_masks_additive(Graph& g);

// Rewrites static-shape split.Tensor / split_with_sizes into one slice.Tensor per piece
// (each writing the piece's value), so delegates that take single-output ops can claim
// them. Run before partitioning.
int split_to_slices(Graph& g);


}  // namespace exporter
}  // namespace ember

namespace ember {
namespace exporter {

// Makes outputs and state writes explicit, right before planning:
//  - a graph output that is not an activation produced by a node (an input, a constant, a
//    state tensor) or that repeats an earlier output gets a copy (aten::clone.default);
//  - each write-back (buffer / user-input mutation) whose source is not already the target
//    becomes `aten::copy.default(self=target, src=source, non_blocking=False)` writing into
//    the target.
int finalize_outputs(Graph& g);

}  // namespace exporter
}  // namespace ember
