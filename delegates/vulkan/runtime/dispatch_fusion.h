// Dispatch fusion for the Vulkan delegate: which blob nodes run inside a neighbour's dispatch.
// Decoding a token is hundreds of small dependent dispatches, each costing a few microseconds
// of launch and barrier on top of its work, so the decoder's common chains are fused into the
// weight-only linear shader (linear_wq.comp):
//   - an RMSNorm whose every consumer is a weight-only linear: each linear normalises its
//     input row itself (NORM), the RMSNorm's dispatch is dropped;
//   - silu_mul(gate, up) of two weight-only linears of the same input, without bias: one
//     dispatch computes both dots and the SwiGLU (GATED), the other linear's is dropped;
//   - add(linear, r) of a weight-only linear used only there: the add runs in the linear's
//     epilogue (RESIDUAL), when r exists before the linear runs;
//   - two or three other weight-only linears of the same x, without bias (an attention's q, k
//     and v projections): one dispatch computes all their outputs (SPLIT).
// Convolutions and float linears take their consumers' element-wise work into their epilogue
// (conv2d_gemm.comp; a CNN's adds and relus otherwise cost a dispatch and a barrier each):
//   - add(conv, r) of a conv (or linear) without activation used only there (maybe through
//     views or permutes of size-1 dims), r existing before it runs and of the same sizes: it
//     adds r (RESIDUAL; the GEMM path only);
//   - relu / clamp / hardtanh / silu / sigmoid / gelu of such a conv, or of such an add: the
//     conv applies it (the GEMM path, conv2d.comp's direct loop, and matmul.comp for few-row
//     linears and 1x1-image convs);
//   - mul(x, s) of an [N, C, H, W] x by an [N, C, 1, 1] s (squeeze-and-excitation), read only
//     as a conv's input: the conv scales x's channels as it reads them (IN_SCALE; the GEMM path
//     only, which then drops the mul's dispatch);
//   - and when s = act2(fc2(act1(fc1(p)))), two linears (or 1x1 convs of 1x1 images) whose
//     results only this chain reads: the conv's workgroups compute act2(fc2(.)) of their k
//     range's channels themselves from fc1's output (IN_SCALE 3) and fc2's dispatch is dropped
//     (an EfficientNet block: 1 dispatch fewer; gemm_lowering.cc says why fc1 keeps its own).
// Attention without a cache (Sdpa, sdpa.comp) reads q, k and v through strides, so the
// permutes, slices and views between them and their producers cost no copy, nor does a permute
// of its output (lazy_layout, sdpa_permute): a ViT's qkv split and head transposes.
// And the transposes around attention (rank-4 permutes (0, 2, 1, 3): [B, T, H, D] <-> [B, H, T,
// D]) into their neighbours' indexing, so no copy is dispatched:
//   - a permute read only by RoPE (its x) and attention (q, k, v): they read its input in the
//     token-major order (rope.comp, attention.comp);
//   - a permute whose input only it reads, an attention's output: the attention writes the
//     permute's output in token-major order.
// Every tensor keeps its own buffer (the delegate does not share memory between tensors), so
// reading a permute's input later than the copy would have is safe. And a RoPE read only by an
// attention, as its q or k, runs inside the attention's dispatch (attention.comp rotates the
// query row it loads and the new keys as it reads and stores them).
// The plan is structural (node kinds, consumers, tensor kinds, blob sizes), so the graph lowers
// to the same dispatches with the same bindings at every dynamic size. Lowering still checks
// each node's shapes at each size. EMBER_VULKAN_FUSE=0 turns fusion off (for measuring and
// debugging). Internal to the Vulkan runtime (graph_lowering.cc).
#pragma once

#include <array>
#include <vector>

#include "delegates/vulkan/vulkan_graph_generated.h"

namespace ember {
namespace vulkan {

struct FusionPlan {
  // Per node: its dispatch is not emitted (an RMSNorm folded into its consumers).
  std::vector<bool> folded_norm;
  // Per node: the RMSNorm node (index) whose input this weight-only linear normalises, or -1.
  std::vector<int> norm_source;
  // Per node: for an add fused into a linear's epilogue, that linear (node index), else -1;
  // residual_input: which input (0 or 1) of the add is the residual.
  std::vector<int> residual_linear;
  std::vector<int> residual_input;
  // Per node: for an add fused into a conv's epilogue, that conv (node index), else -1 (which
  // input is the residual: residual_input).
  std::vector<int> conv_residual;
  // Per node: for a relu / clamp / hardtanh / silu / sigmoid / gelu a conv (or linear) applies (to its own result or to an add fused
  // into it), that conv, else -1.
  std::vector<int> conv_activation;
  // Per node: for a conv whose input is a squeeze-and-excitation mul it may read through, that
  // mul (node index), else -1.
  std::vector<int> scaled_input;
  // Per node: for such a conv whose scale is an excitation it may compute itself, the two
  // linear (or 1x1-image conv) nodes fc1, fc2, else -1 (the lowering checks their dispatches).
  std::vector<int> excite_fc1, excite_fc2;
  // Per node: for a silu_mul computed by one gated dispatch, (gate linear, up linear) node
  // indices, else (-1, -1).
  std::vector<int> gate_linear, up_linear;
  // Per node: for a weight-only linear whose output another linear's dispatch computes (SPLIT),
  // that linear (the first of its group, in node order), else -1; for that first one, the others,
  // in node order (-1: none).
  std::vector<int> split_leader;
  std::vector<std::array<int, 2>> split_members;
  // Per node: a permute whose copy is not emitted (its readers or its producer index through it).
  std::vector<bool> folded_permute;
  // Per tensor: for the output of a permute folded into its readers, the permute's input (read in
  // token-major order), else -1.
  std::vector<int> transposed_source;
  // Per node: for an attention that writes token-major, the tensor it writes (the folded
  // permute's output), else -1.
  std::vector<int> transposed_output;
  // Per node: a RoPE computed inside an attention's dispatches, not emitted.
  std::vector<bool> folded_rope;
  // Per node: for an attention, the RoPE nodes whose outputs it reads as q / k and computes
  // itself, else -1.
  std::vector<int> q_rope, k_rope;
  // Per node: a permute, slice or view whose output only such nodes and Sdpa nodes (as q, k or
  // v) read: nothing is copied, its readers index its source through strides (strided_view.h).
  std::vector<bool> lazy_layout;
  // Per node: for an Sdpa whose private output only a permute reads, that permute (node index;
  // marked folded_permute): the Sdpa writes the permute's output in its order. Else -1.
  std::vector<int> sdpa_permute;
};

// The plan for g (all -1 / false when EMBER_VULKAN_FUSE=0 or nothing matches), made once per
// graph at init (VulkanGraph) and used by every lowering. Reads only what the blob says; a
// malformed blob gives a plan lowering then refuses node by node.
FusionPlan plan_fusions(const fb::Graph& g);

}  // namespace vulkan
}  // namespace ember
