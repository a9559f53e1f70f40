// Output-shape rules of the Vulkan delegate's ops, shared by the blob builder (to infer
// shapes) and the runtime (to check a blob's shapes before any shader can index out of
// bounds). Every function returns an empty string on success, else what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace vulkan {

using Sizes = std::vector<int64_t>;

// Highest tensor rank the shaders handle (push-constant index spaces hold 8 dims).
constexpr int kMaxDims = 8;

int64_t numel(const Sizes& s);
std::string sizes_str(const Sizes& s);
// Normalises a possibly negative dim into [0, rank); false when out of range.
bool normalize_dim(int64_t dim, int64_t rank, int64_t* out);

// stride/padding/dilation: 1 or 2 entries (one entry applies to both dims).
struct Window2d {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
};
// Reads a 1- or 2-entry list into (a, b); `dflt` when empty and allow_empty.
std::string read_pair(const int32_t* v, size_t n, const char* what, bool allow_empty,
                      int64_t dflt, int64_t* a, int64_t* b);

// bias_numel < 0: no bias.
std::string infer_conv2d(const Sizes& x, const Sizes& w, int64_t bias_numel, const Window2d& win,
                         int64_t groups, Sizes* out);
std::string infer_linear(const Sizes& x, const Sizes& w, int64_t bias_numel, Sizes* out);
// Weight-only quantized linear (bits 8: w [N, K]; bits 4: w [N, K / 2] packed), scales
// [N, K / group]; K and group as vulkan_graph.fbs LinearParams says.
std::string infer_linear_weight_only(const Sizes& x, const Sizes& w, const Sizes& scales, int64_t bias_numel,
                                     int64_t bits, int64_t group, Sizes* out);
std::string infer_matmul(const Sizes& a, const Sizes& b, Sizes* out);
std::string infer_broadcast(const Sizes& a, const Sizes& b, Sizes* out);
// Max/avg pooling (kernel in win.kh/kw). avg ignores dilation (must be 1).
std::string infer_pool2d(const Sizes& x, const Window2d& win, bool ceil_mode, Sizes* out);
std::string infer_adaptive_pool2d(const Sizes& x, int64_t oh, int64_t ow, Sizes* out);
std::string infer_layer_norm(const Sizes& x, int64_t normalized_ndim, int64_t weight_numel,
                             int64_t bias_numel, Sizes* out);
// dims: normalised, sorted, contiguous on success (written back).
std::string infer_mean(const Sizes& x, std::vector<int64_t>* dims, bool keepdim, Sizes* out);
std::string infer_permute(const Sizes& x, const std::vector<int64_t>& perm, Sizes* out);
std::string infer_view(const Sizes& x, const Sizes& target, Sizes* out);  // one -1 allowed
// PyTorch expand: `target` right-aligned with x; -1 keeps x's size; x's size-1 dims repeat.
std::string infer_expand(const Sizes& x, const Sizes& target, Sizes* out);
std::string infer_cat(const std::vector<Sizes>& xs, int64_t dim, Sizes* out);
// start/end/step normalised in place (PyTorch slice semantics, step > 0).
std::string infer_slice(const Sizes& x, int64_t dim, int64_t* start, int64_t* end, int64_t step,
                        Sizes* out);
std::string infer_embedding(const Sizes& weight, const Sizes& indices, Sizes* out);
// Weight-only quantized embedding: weight [V, D] (bits 8) or [V, D / 2] (bits 4), scales
// [V, D / group] (group and D as for infer_linear_weight_only's K).
std::string infer_embedding_weight_only(const Sizes& weight, const Sizes& scales, const Sizes& indices, int64_t bits,
                                        int64_t group, Sizes* out);
// x [..., T, D] (D even), cos and sin alike [..., T or 1, D] with every leading dim 1 and rank
// <= x's; out = x's sizes.
std::string infer_rope(const Sizes& x, const Sizes& cos, const Sizes& sin, Sizes* out);
// q [B, H, T, D], k and v [B, Hkv, T, D] (H a multiple of Hkv), caches [B, Hkv, S, D], pos [T]
// with T <= S; out = q's sizes.
std::string infer_attention(const Sizes& q, const Sizes& k, const Sizes& v, const Sizes& k_cache,
                            const Sizes& v_cache, const Sizes& pos, Sizes* out);
// sdpa.comp keeps a query row (e), its scores (s keys) and 64 partial sums in shared memory:
// sdpa_shared_floats(). The exporter emits an Sdpa node only when they fit Vulkan's minimum of
// 16 KB, kSdpaMaxSharedFloats; the runtime checks the device's own limit.
constexpr int64_t kSdpaMaxSharedFloats = 4096;
inline int64_t sdpa_shared_floats(int64_t s, int64_t e) { return e + s + 64; }
// SdpaParams: q (B, H, L, E), k (B, H, S, E), v (B, H, S, Ev), mask (empty: none) broadcastable to
// (B, H, L, S); *out = (B, H, L, Ev).
std::string infer_sdpa(const Sizes& q, const Sizes& k, const Sizes& v, const Sizes& mask, Sizes* out);

}  // namespace vulkan
}  // namespace ember
