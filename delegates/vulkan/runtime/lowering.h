// The Vulkan graph lowering's internals (graph_lowering.cc, gemm_lowering.cc): the Lowering
// class that turns one blob node into dispatches, and the helpers and shader layouts it shares.
// Internal to the Vulkan runtime; the entry point is graph_lowering.h's lower_nodes().
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "delegates/vulkan/runtime/conv_gemm_plan.h"
#include "delegates/vulkan/runtime/graph_lowering.h"
#include "delegates/vulkan/runtime/shader_library.h"
#include "delegates/vulkan/runtime/strided_view.h"
#include "delegates/vulkan/runtime/tuning_env.h"

namespace ember {
namespace vulkan {
namespace lowering {
using TensorInfo = VulkanGraph::TensorInfo;
using Dispatch = VulkanGraph::Dispatch;




inline uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
inline uint32_t ibits(int64_t v) { return static_cast<uint32_t>(static_cast<int32_t>(v)); }

// The tiled matmul shader path (TILED spec constant): 32x32 output tiles, one 64-invocation
// workgroup each (the shader assumes kWorkgroupSize == 64). Convolutions tile in conv2d_gemm.comp.
constexpr int64_t kTile = 32;
constexpr int64_t kMinTiledRows = 16;  // below this many output rows the direct loop wins
static_assert(kWorkgroupSize == 64, "matmul.comp tiles and pool2d.comp sums planes with 64 invocations");
inline int64_t tiles(int64_t n) { return (n + kTile - 1) / kTile; }
// layer_norm.comp's cooperative rows may use up to this many invocations (its shared array).
constexpr uint32_t kLongRowWorkgroup = 256;

// conv2d.comp / conv2d_gemm.comp specialisation constants, as indices of Dispatch::spec (constant_id - 1).
constexpr uint32_t kConvActClamp = 1, kConvActSilu = 2, kConvActSigmoid = 3, kConvActGelu = 4,
                   kConvActGeluTanh = 5;  // ACT values (conv_activation.glsl)
constexpr size_t kConvSplits = 20, kConvPhase = 22, kConvHasResidual = 23;          // conv2d_gemm.comp
constexpr size_t kConvWindow = 7, kConvWindowEnd = 15;  // spec indices of KH .. DW
// conv2d_gemm.comp's push constants, in its order: the spec indices they come from (sizes,
// groups, splits, chunk, bias, activation, bounds, residual, strides, padding, dilation).
// Then the excitation's (IN_SCALE 2 / 3): fc1's outputs, its activation and bounds, fc2's.
constexpr size_t kConvGemmPushFrom[] = {0,  1,  2,  3,  4,  5,  6,  15, 20, 21, 16, 17, 18, 19,
                                        23, 9,  10, 11, 12, 13, 14, 26, 27, 28, 29, 30, 31, 32};
constexpr size_t kConvExcite = 26;  // spec indices 26 .. 32: hidden, act1, min1, max1, act2, min2, max2
// bindings: x, w, b, residual, in_scale (or the pooled means), fc1 w, b, fc2 w, b, partial, y
constexpr size_t kConvGemmX = 0, kConvGemmResidual = 3, kConvGemmScale = 4, kConvGemmExcite = 5, kConvGemmOut = 10;
constexpr size_t kConvInScale = 25;  // conv2d_gemm.comp IN_SCALE (spec index)
// IN_SCALE 2 / 3's limits (conv2d_gemm.comp keeps the scales in the finished tile's 4352 floats).
constexpr int64_t kExciteMaxChannels = 4096, kExciteMaxHidden = 256;
// Where a dispatch of conv2d.comp, conv2d_gemm.comp or matmul.comp keeps its fused activation
// (ACT, ACT_MIN, ACT_MAX: spec indices) and its output (binding).
struct EpilogueSlots {
  size_t act, act_min, act_max, out;
};
EpilogueSlots epilogue_slots(ShaderId s);

// Moves each conv2d_gemm.comp dispatch's sizes, split and epilogue from its specialisation
// values into its push constants (gemm_lowering.cc); with `coop_matrix_f16` the GEMM phases
// (not the reductions) switch to the matrix-unit variant.
void pack_gemm_push(std::vector<Dispatch>& dispatches, bool coop_matrix_f16);

// EMBER_VULKAN_TILED: the tiled matmul path.
inline bool use_tiled(bool heuristic) { return tuning_choice("EMBER_VULKAN_TILED", heuristic); }

inline std::vector<int64_t> contiguous(const Sizes& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

// A permute (normalised `perm`) of sizes `s` that moves only size-1 dims: the same element order.
inline bool moves_only_unit_dims(const Sizes& s, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t d : perm) {
    if (s[static_cast<size_t>(d)] == 1) continue;
    if (d < last) return false;
    last = d;
  }
  return true;
}

inline int64_t prod(const Sizes& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

template <typename T>
std::vector<uint8_t> to_bytes(const T& v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

struct IndexSpacePush {  // layout of the push constants of binary.comp / strided_copy.comp
  int32_t rank, numel, a, b;
  int32_t sizes[kMaxDims], s0[kMaxDims], s1[kMaxDims];
};
static_assert(sizeof(IndexSpacePush) == 112, "push constant layout");

inline std::vector<int32_t> ints(const flatbuffers::Vector<int32_t>* v) {
  std::vector<int32_t> r;
  if (v != nullptr) r.assign(v->begin(), v->end());
  return r;
}

// Lowers one node; keeps the per-node context for messages.
class Lowering {
 public:
  Lowering(std::vector<TensorInfo>& t, LoweringResult* r, bool derive, const LoweringLimits& limits,
           const fb::Graph& g, const FusionPlan& plan, Diagnostic* diag)
      : g_nodes_(g.nodes()), t_(t), d_(r->dispatches), positions_(r->positions), derive_(derive), limits_(limits), plan_(plan),
        node_dispatch_(plan.norm_source.size(), -1), diag_(diag) {}

  // Drops the dispatches a fusion made redundant (after the last node).
  void compact() {
    size_t kept = 0;
    for (size_t i = 0; i < d_.size(); ++i)
      if (i >= dead_.size() || !dead_[i]) {
        if (kept != i) d_[kept] = std::move(d_[i]);
        ++kept;
      }
    d_.resize(kept);
  }

  Error lower(const fb::Node* n, size_t index) {
    node_ = n;
    index_ = index;
    op_ = fb::EnumNameParams(n->params_type());
    if (n->params() == nullptr || n->params_type() == fb::Params::NONE) return bad("has no params");
    if (n->inputs() == nullptr || n->outputs() == nullptr || n->outputs()->size() != 1)
      return bad("needs an inputs list and exactly one output");
    out_ = static_cast<int>(n->outputs()->Get(0));
    if (out_ < 0 || static_cast<size_t>(out_) >= t_.size()) return bad("output tensor id out of range");
    const TensorInfo& o = t_[out_];
    if (o.kind != static_cast<uint8_t>(fb::TensorKind::Internal) && o.kind != static_cast<uint8_t>(fb::TensorKind::Output))
      return bad("writes an input or constant tensor");
    if (o.available) return bad("writes tensor %d, which another node already produced", out_);
    for (uint32_t i = 0; i < n->inputs()->size(); ++i) {
      int id = n->inputs()->Get(i);
      if (id == -1) continue;
      if (id < 0 || static_cast<size_t>(id) >= t_.size()) return bad("input tensor id %d out of range", id);
      if (!t_[id].available) return bad("reads tensor %d before it is produced", id);
    }
    Error e = dispatch_op();
    if (e != Error::Ok) return e;
    t_[out_].available = true;
    return Error::Ok;
  }

 private:
  // A refused blob (InvalidProgram) or a node this device or delegate cannot run (NotSupported),
  // naming the node.
  Error bad(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    const Error e = node_failure(Error::InvalidProgram, "vulkan blob: node %zu (%s) %s", fmt, ap);
    va_end(ap);
    return e;
  }
  Error unsupported(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    va_list ap;
    va_start(ap, fmt);
    const Error e = node_failure(Error::NotSupported, "vulkan: node %zu (%s): %s", fmt, ap);
    va_end(ap);
    return e;
  }
  // `frame` takes the node index, the op name and the formatted message.
  Error node_failure(Error code, const char* frame, const char* fmt, va_list ap) {
    char msg[256];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    return fail(diag_, code, frame, index_, op_, msg);
  }
  Error shape_error(const std::string& s) { return bad("%s", s.c_str()); }

  size_t num_in() const { return node_->inputs()->size(); }
  int in(size_t i) const { return i < num_in() ? node_->inputs()->Get(static_cast<uint32_t>(i)) : -1; }
  const Sizes& sz(int id) const { return t_[id].sizes; }
  bool is_f32(int id) const { return t_[id].dtype == static_cast<uint8_t>(fb::DType::Float32); }

  Error need_inputs(size_t min, size_t max) {
    if (num_in() < min || num_in() > max) return bad("has %zu inputs, expected %zu..%zu", num_in(), min, max);
    for (size_t i = 0; i < min; ++i)
      if (in(i) < 0) return bad("input %zu is required", i);
    return Error::Ok;
  }
  Error need_f32(std::initializer_list<int> ids) {
    for (int id : ids)
      if (id >= 0 && !is_f32(id)) return unsupported("tensor %d is not float32 (only float32 is implemented)", id);
    return Error::Ok;
  }
  Error check_out(const Sizes& expected) {
    if (derive_) {  // below the bound: the derived sizes, within the buffer
      const Sizes& bound = t_[out_].bound;
      if (expected.size() != bound.size() || numel(expected) > numel(bound))
        return bad("output %d would be %s at this dynamic size, beyond its bound %s", out_, sizes_str(expected).c_str(),
                   sizes_str(bound).c_str());
      set_tensor_sizes(t_[out_], expected);
      return Error::Ok;
    }
    if (expected != sz(out_))
      return bad("output %d has sizes %s, expected %s", out_, sizes_str(sz(out_)).c_str(), sizes_str(expected).c_str());
    return Error::Ok;
  }
  // Where a [B, H, T, D] input is read from: itself, or (a folded transpose, dispatch_fusion.h)
  // the permute's input, [B, T, H, D], with H heads.
  struct TokenMajor {
    int tensor;
    int64_t heads;  // 0: read as is
  };
  TokenMajor token_major(int x) const {
    const int src = x >= 0 && static_cast<size_t>(x) < plan_.transposed_source.size() ? plan_.transposed_source[static_cast<size_t>(x)] : -1;
    if (src < 0 || sz(x).size() != 4) return {x, 0};
    return {src, sz(x)[1]};
  }
  // What an attention reads as q or k: the tensor itself, or, for a RoPE it computes
  // (dispatch_fusion.h, node `rope` or -1), the RoPE's x (itself maybe token-major), cos and
  // sin with their rows (1: one row for every token).
  struct RopeIn {
    TokenMajor x;
    int cos, sin;
    int64_t rows;
  };
  RopeIn rope_input(int id, int rope) const {
    if (rope < 0) return {token_major(id), -1, -1, 0};
    const fb::Node* n = g_nodes_->Get(static_cast<uint32_t>(rope));
    // Checked by its own lowering, which came first (the plan keeps a RoPE before its attention).
    const int x = n->inputs()->Get(0), c = n->inputs()->Get(1);
    return {token_major(x), c, n->inputs()->Get(2), sz(c).size() >= 2 ? sz(c)[sz(c).size() - 2] : 1};
  }
  // How `id` is read by a reader that indexes with strides: its lazy view, or itself, contiguous.
  StridedView view_of(int id) const {
    if (id >= 0 && static_cast<size_t>(id) < views_.size() && views_[static_cast<size_t>(id)].tensor >= 0)
      return views_[static_cast<size_t>(id)];
    return {id, 0, contiguous(sz(id))};
  }
  // A lazy layout node's output `out_` (of sizes `out`) as `v`; false: a view of a tensor with
  // elements beyond 32-bit offsets (then copied instead).
  bool set_view(StridedView v) {
    if (views_.size() < t_.size()) views_.resize(t_.size());
    int64_t last = v.offset;
    for (size_t i = 0; i < v.strides.size(); ++i) last += (sz(out_)[i] - 1) * v.strides[i];
    if (v.offset < 0 || last >= (int64_t{1} << 31)) return false;
    views_[static_cast<size_t>(out_)] = std::move(v);
    return true;
  }
  Error need_shader(fb::Shader s) {
    if (node_->shader() != s)
      return bad("uses shader %s, expected %s", fb::EnumNameShader(node_->shader()), fb::EnumNameShader(s));
    return Error::Ok;
  }
  void add(ShaderId s, std::vector<uint32_t> spec, std::vector<int> bindings, int64_t invocations,
           std::vector<uint8_t> push = {}, uint32_t workgroup = kWorkgroupSize) {
    Dispatch d{s, std::move(spec), std::move(push), std::move(bindings), static_cast<uint64_t>(invocations), workgroup};
    d_.push_back(std::move(d));
  }
  // The graph's one scratch tensor (fp32, grown to the largest request; dispatches that use it
  // are ordered by the barrier rule like any other). Appending may move t_: callers copy sizes first.
  int scratch(int64_t floats) {
    if (scratch_ < 0) {
      TensorInfo t;
      t.dtype = static_cast<uint8_t>(fb::DType::Float32);
      t.kind = static_cast<uint8_t>(fb::TensorKind::Internal);
      t.root = static_cast<int>(t_.size());
      t.available = true;
      scratch_ = t.root;
      t_.push_back(t);
    }
    TensorInfo& t = t_[static_cast<size_t>(scratch_)];
    if (t.sizes.empty() || t.sizes[0] < floats) {
      set_tensor_sizes(t, {floats});
      t.bound = t.sizes;
    }
    return scratch_;
  }
  void add_copy(int src, int dst, const Sizes& sizes, const std::vector<int64_t>& ss,
                const std::vector<int64_t>& ds, int64_t src_off, int64_t dst_off) {
    IndexSpacePush p{};
    p.rank = static_cast<int32_t>(sizes.size());
    p.numel = static_cast<int32_t>(numel(sizes));
    p.a = static_cast<int32_t>(src_off);
    p.b = static_cast<int32_t>(dst_off);
    for (size_t i = 0; i < sizes.size(); ++i) {
      p.sizes[i] = static_cast<int32_t>(sizes[i]);
      p.s0[i] = static_cast<int32_t>(ss[i]);
      p.s1[i] = static_cast<int32_t>(ds[i]);
    }
    add(ShaderId::StridedCopy, {}, {src, dst}, numel(sizes), to_bytes(p));
  }
  Error need_copyable(int a) {
    if (t_[a].dtype != t_[out_].dtype) return bad("changes the dtype");
    if (dtype_size(static_cast<fb::DType>(t_[a].dtype)) != 4) return unsupported("only 4-byte element types can be copied");
    return Error::Ok;
  }

  Error dispatch_op();
  Error linear_weight_only(const fb::LinearParams* p);
  Error split_member(int j, int x, int bits, int group, int64_t* rows, int* w, int* s, int* y);
  bool fuse_into_linear(const fb::BinaryParams* p, int a, int b);
  void add_linear(int x, int w, int b, int64_t m, int64_t k, int64_t n, bool act, float act_min, float act_max);
  void add_gemm(std::vector<uint32_t> spec, const ConvGemmPlan& gemm, int x, int w, int b, int64_t outputs, bool rows_major);
  void excite_in_conv(std::vector<uint32_t>& spec, std::vector<int>& bindings);
  std::vector<Dispatch*> conv_dispatches(int node);
  bool fuse_residual_into_conv(const fb::BinaryParams* p, int a, int b);
  bool fuse_activation_into_conv(const fb::UnaryParams* p, int x);
  Error embedding_weight_only(const fb::EmbeddingParams* p);

  bool is_kind(int id, fb::TensorKind k) const { return t_[id].kind == static_cast<uint8_t>(k); }
  bool is_int64(int id) const { return t_[id].dtype == static_cast<uint8_t>(fb::DType::Int64); }
  // The workgroup of the shaders that take 64 or 256 invocations: 256 where the device allows.
  uint32_t wide_workgroup() const {
    return limits_.max_workgroup >= kLongRowWorkgroup ? kLongRowWorkgroup : kWorkgroupSize;
  }
  // attention.comp's workgroup: EMBER_VULKAN_ATTN_WG (a power of two, 64 to 1024, within the
  // device's limit), else 512 invocations where the device allows (decoding the 1.1B Llama on an
  // H200, docs/benchmarks-gpu.md: 16.4 us a layer with 256, 13.2 with 1024; 512 as fast as 1024).
  uint32_t attention_workgroup() const {
    const long v = tuning_number("EMBER_VULKAN_ATTN_WG");
    if (v >= 64 && v <= 1024 && (v & (v - 1)) == 0 && static_cast<uint32_t>(v) <= limits_.max_workgroup)
      return static_cast<uint32_t>(v);
    return limits_.max_workgroup >= 512 ? 512u : wide_workgroup();
  }
  // Weight `w` of a weight-only quantized node: Int8 for 8 bits, UInt8 (packed) for 4.
  Error need_quantized_weight(int w, int bits) {
    const uint8_t want = static_cast<uint8_t>(bits == 8 ? fb::DType::Int8 : fb::DType::UInt8);
    if ((bits != 8 && bits != 4) || t_[w].dtype != want) return bad("weight of %d bits must be %s", bits, bits == 8 ? "Int8" : "UInt8");
    return Error::Ok;
  }
  bool is_index(int id) const {
    return t_[id].dtype == static_cast<uint8_t>(fb::DType::Int32) || t_[id].dtype == static_cast<uint8_t>(fb::DType::Int64);
  }

  const flatbuffers::Vector<flatbuffers::Offset<fb::Node>>* g_nodes_;
  std::vector<TensorInfo>& t_;
  std::vector<Dispatch>& d_;
  std::vector<std::pair<int, int64_t>>& positions_;
  bool derive_;
  const LoweringLimits& limits_;
  const FusionPlan& plan_;
  std::vector<int> node_dispatch_;  // node -> its linear, (first) conv or binary dispatch (fusion targets)
  std::vector<bool> dead_;          // dispatches a fusion made redundant
  Diagnostic* diag_;
  const fb::Node* node_ = nullptr;
  size_t index_ = 0;
  const char* op_ = "";
  int out_ = -1;
  int scratch_ = -1;  // scratch(): the graph's scratch tensor, once made
  // Per tensor: how a lazy layout node's output is read (strided_view.h); tensor -1: as itself.
  std::vector<StridedView> views_;
};

}  // namespace lowering
}  // namespace vulkan
}  // namespace ember
