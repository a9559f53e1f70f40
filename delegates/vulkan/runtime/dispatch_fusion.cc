#include "delegates/vulkan/runtime/dispatch_fusion.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace ember {
namespace vulkan {
namespace {

bool fusion_enabled() {
  const char* v = std::getenv("EMBER_VULKAN_FUSE");
  return v == nullptr || v[0] != '0';
}

// The blob as the plan reads it: every id checked, nothing trusted.
class GraphView {
 public:
  explicit GraphView(const fb::Graph& g) : g_(g) {
    num_tensors_ = g.tensors() != nullptr ? static_cast<int>(g.tensors()->size()) : 0;
    num_nodes_ = g.nodes() != nullptr ? static_cast<int>(g.nodes()->size()) : 0;
    producer_.assign(static_cast<size_t>(num_tensors_), -1);
    consumers_.assign(static_cast<size_t>(num_tensors_), 0);
    for (int i = 0; i < num_nodes_; ++i) {
      const fb::Node* n = node(i);
      if (n->inputs() != nullptr)
        for (int id : *n->inputs())
          if (valid(id)) ++consumers_[static_cast<size_t>(id)];
      const int o = output(i);
      if (valid(o) && producer_[static_cast<size_t>(o)] < 0) producer_[static_cast<size_t>(o)] = i;
    }
    other_reads_.assign(static_cast<size_t>(num_tensors_), 0);
    for (int i = 0; i < num_nodes_; ++i) {
      const bool linear = wq_linear(i) != nullptr;
      for (int s = 0; s < num_inputs(i); ++s) {
        const int id = input(i, static_cast<uint32_t>(s));
        if (valid(id) && !(linear && s == 0)) ++other_reads_[static_cast<size_t>(id)];
      }
    }
  }
  int num_nodes() const { return num_nodes_; }
  int num_tensors() const { return num_tensors_; }
  const fb::Node* node(int i) const { return g_.nodes()->Get(static_cast<uint32_t>(i)); }
  bool valid(int id) const { return id >= 0 && id < num_tensors_ && g_.tensors()->Get(static_cast<uint32_t>(id)) != nullptr; }
  int input(int i, uint32_t slot) const {
    const fb::Node* n = node(i);
    return n->inputs() != nullptr && slot < n->inputs()->size() ? n->inputs()->Get(slot) : -1;
  }
  int num_inputs(int i) const { return node(i)->inputs() != nullptr ? static_cast<int>(node(i)->inputs()->size()) : 0; }
  int output(int i) const {
    const fb::Node* n = node(i);
    return n->outputs() != nullptr && n->outputs()->size() == 1 ? static_cast<int>(n->outputs()->Get(0)) : -1;
  }
  int producer(int id) const { return valid(id) ? producer_[static_cast<size_t>(id)] : -1; }
  int consumers(int id) const { return valid(id) ? consumers_[static_cast<size_t>(id)] : 0; }
  const fb::Tensor* tensor(int id) const { return g_.tensors()->Get(static_cast<uint32_t>(id)); }
  bool kind_is(int id, fb::TensorKind k) const { return valid(id) && tensor(id)->kind() == k; }
  bool is_f32(int id) const { return valid(id) && tensor(id)->dtype() == fb::DType::Float32; }
  bool same_sizes(int a, int b) const {
    const auto *sa = tensor(a)->sizes(), *sb = tensor(b)->sizes();
    if (sa == nullptr || sb == nullptr || sa->size() != sb->size()) return false;
    for (uint32_t i = 0; i < sa->size(); ++i)
      if (sa->Get(i) != sb->Get(i)) return false;
    return true;
  }

  // A weight-only quantized linear without activation: inputs [x, weight, bias or -1, scales].
  const fb::LinearParams* wq_linear(int i) const {
    if (i < 0 || i >= num_nodes_) return nullptr;
    const fb::Node* n = node(i);
    const fb::LinearParams* p = n->params_as_LinearParams();
    if (n->shader() != fb::Shader::Matmul || p == nullptr || p->weight_bits() == 0 ||
        p->activation() != fb::Activation::None || num_inputs(i) != 4 || !valid(output(i)))
      return nullptr;
    return p;
  }
  // A conv or a float (not weight-only) linear without activation: conv2d_gemm.comp's epilogue
  // may take its consumers' work (whether it runs there is the lowering's decision).
  bool plain_conv(int i) const {
    if (i < 0 || i >= num_nodes_) return false;
    const fb::Node* n = node(i);
    if (!valid(output(i)) || !is_f32(output(i))) return false;
    if (const fb::LinearParams* l = n->params_as_LinearParams())
      return n->shader() == fb::Shader::Matmul && l->weight_bits() == 0 && l->activation() == fb::Activation::None;
    const fb::Conv2dParams* p = n->params_as_Conv2dParams();
    return n->shader() == fb::Shader::Conv2d && p != nullptr && p->activation() == fb::Activation::None;
  }
  // An internal tensor read once, by the node that takes it over.
  bool private_result(int id) const { return kind_is(id, fb::TensorKind::Internal) && consumers(id) == 1; }
  // Read, and only as the input x of weight-only linears.
  bool only_linear_input(int id) const { return consumers(id) > 0 && other_reads_[static_cast<size_t>(id)] == 0; }

 private:
  const fb::Graph& g_;
  int num_tensors_ = 0, num_nodes_ = 0;
  std::vector<int> producer_, consumers_;
  std::vector<int> other_reads_;  // reads other than as input 0 of a weight-only linear
};

// RMSNorm node i (inputs [x, weight], 1 dim) whose output only weight-only linears read, as their x.
bool norm_feeds_only_linears(const GraphView& v, int i) {
  const fb::Node* n = v.node(i);
  const fb::LayerNormParams* p = n->params_as_LayerNormParams();
  if (n->shader() != fb::Shader::LayerNorm || p == nullptr || !p->rms() || p->normalized_ndim() != 1) return false;
  const int x = v.input(i, 0), w = v.input(i, 1), o = v.output(i);
  if (v.num_inputs(i) < 2 || v.num_inputs(i) > 3 || v.input(i, 2) >= 0 || !v.is_f32(x) || !v.is_f32(w)) return false;
  return !v.kind_is(x, fb::TensorKind::State) && v.kind_is(o, fb::TensorKind::Internal) && v.only_linear_input(o);
}

bool is_attention(const GraphView& v, int i) {
  return i >= 0 && i < v.num_nodes() && v.node(i)->shader() == fb::Shader::Attention &&
         v.node(i)->params_type() == fb::Params::AttentionParams;
}

// A permute (0, 2, 1, 3) of a rank-4 float tensor into an internal one.
bool swaps_heads_and_tokens(const GraphView& v, int i) {
  const fb::Node* n = v.node(i);
  const fb::PermuteParams* p = n->params_as_PermuteParams();
  if (n->shader() != fb::Shader::StridedCopy || p == nullptr || p->perm() == nullptr || v.num_inputs(i) != 1) return false;
  const auto* perm = p->perm();
  if (perm->size() != 4 || perm->Get(0) != 0 || perm->Get(1) != 2 || perm->Get(2) != 1 || perm->Get(3) != 3) return false;
  const int x = v.input(i, 0), o = v.output(i);
  return v.is_f32(x) && v.is_f32(o) && v.kind_is(o, fb::TensorKind::Internal) && v.tensor(x)->sizes() != nullptr &&
         v.tensor(x)->sizes()->size() == 4;
}

// Whether node i can read its input `slot` in token-major order: RoPE's x; attention's q, k, v.
bool reads_token_major(const GraphView& v, int i, int slot) {
  const fb::Node* n = v.node(i);
  if (n->shader() == fb::Shader::Rope && n->params_type() == fb::Params::RopeParams) return slot == 0;
  if (is_attention(v, i)) return slot >= 0 && slot <= 2;
  return false;
}

bool is_sdpa(const GraphView& v, int i) {
  return i >= 0 && i < v.num_nodes() && v.node(i)->shader() == fb::Shader::Sdpa &&
         v.node(i)->params_type() == fb::Params::SdpaParams;
}

// A permute, slice or view of one input.
bool is_layout(const GraphView& v, int i) {
  const fb::Node* n = v.node(i);
  const fb::Params t = n->params_type();
  if (v.num_inputs(i) != 1 || !v.valid(v.input(i, 0)) || !v.valid(v.output(i))) return false;
  if (t == fb::Params::ViewParams) return n->shader() == fb::Shader::None;
  return n->shader() == fb::Shader::StridedCopy && (t == fb::Params::PermuteParams || t == fb::Params::SliceParams);
}

// A view, or a permute that moves only size-1 dims (at the blob's sizes): the lowering makes its
// output an alias of its input (the same bytes in the same order).
bool is_alias_node(const GraphView& v, int i) {
  if (!is_layout(v, i)) return false;
  const fb::Node* n = v.node(i);
  if (n->params_type() == fb::Params::ViewParams) return true;
  const fb::PermuteParams* p = n->params_as_PermuteParams();
  const auto* sizes = v.tensor(v.input(i, 0))->sizes();
  if (p == nullptr || p->perm() == nullptr || sizes == nullptr || p->perm()->size() != sizes->size()) return false;
  const int64_t rank = static_cast<int64_t>(sizes->size());
  int64_t last = -1;
  for (int32_t d : *p->perm()) {
    const int64_t dim = d < 0 ? d + rank : d;
    if (dim < 0 || dim >= rank) return false;
    if (sizes->Get(static_cast<uint32_t>(dim)) == 1) continue;
    if (dim < last) return false;
    last = dim;
  }
  return true;
}

// The tensor that holds `id`'s bytes: back through alias nodes whose inputs only they read.
int alias_source(const GraphView& v, int id) {
  for (int hops = 0; hops < 8; ++hops) {
    const int p = v.producer(id);
    if (p < 0 || !is_alias_node(v, p) || !v.private_result(v.input(p, 0))) return id;
    id = v.input(p, 0);
  }
  return id;
}

// Layout nodes an Sdpa reads through, and permutes of its output (dispatch_fusion.h). A layout
// node is lazy when its output is internal and read only by lazy layout nodes and as an
// Sdpa's q, k or v, and its input does not change later (not State). Readers come after their
// producer, so one backward pass decides.
void plan_layouts(const GraphView& v, FusionPlan* plan) {
  std::vector<std::vector<std::pair<int, int>>> readers(static_cast<size_t>(v.num_tensors()));
  for (int i = 0; i < v.num_nodes(); ++i)
    for (int s = 0; s < v.num_inputs(i); ++s) {
      const int id = v.input(i, static_cast<uint32_t>(s));
      if (v.valid(id)) readers[static_cast<size_t>(id)].push_back({i, s});
    }
  for (int i = v.num_nodes() - 1; i >= 0; --i) {
    if (!is_layout(v, i) || plan->folded_permute[static_cast<size_t>(i)]) continue;
    const int x = v.input(i, 0), o = v.output(i);
    if (!v.kind_is(o, fb::TensorKind::Internal) || v.kind_is(x, fb::TensorKind::State) || !v.is_f32(o)) continue;
    const auto& rs = readers[static_cast<size_t>(o)];
    bool lazy = !rs.empty();
    for (const auto& [j, s] : rs)
      lazy = lazy && j > i && ((is_layout(v, j) && plan->lazy_layout[static_cast<size_t>(j)]) || (is_sdpa(v, j) && s <= 2));
    plan->lazy_layout[static_cast<size_t>(i)] = lazy;
  }
  for (int i = 0; i < v.num_nodes(); ++i) {
    if (!is_sdpa(v, i)) continue;
    const int o = v.output(i);
    if (!v.private_result(o) || readers[static_cast<size_t>(o)].empty()) continue;
    const int j = readers[static_cast<size_t>(o)][0].first;
    const fb::Node* n = v.node(j);
    if (j <= i || n->shader() != fb::Shader::StridedCopy || n->params_type() != fb::Params::PermuteParams ||
        v.num_inputs(j) != 1 || plan->lazy_layout[static_cast<size_t>(j)] || plan->folded_permute[static_cast<size_t>(j)] ||
        !v.valid(v.output(j)) || !v.is_f32(v.output(j)))
      continue;
    plan->sdpa_permute[static_cast<size_t>(i)] = j;
    plan->folded_permute[static_cast<size_t>(j)] = true;
  }
}

// Transposes folded into their neighbours (dispatch_fusion.h).
void plan_transposes(const GraphView& v, FusionPlan* plan) {
  // Per tensor: reads in token-major-capable slots, and the first node that reads it (a
  // malformed blob may read a tensor before the node that writes it).
  std::vector<int> foldable_reads(static_cast<size_t>(v.num_tensors()), 0);
  std::vector<int> first_read(static_cast<size_t>(v.num_tensors()), v.num_nodes());
  for (int i = 0; i < v.num_nodes(); ++i)
    for (int s = 0; s < v.num_inputs(i); ++s) {
      const int id = v.input(i, static_cast<uint32_t>(s));
      if (!v.valid(id)) continue;
      if (reads_token_major(v, i, s)) ++foldable_reads[static_cast<size_t>(id)];
      first_read[static_cast<size_t>(id)] = std::min(first_read[static_cast<size_t>(id)], i);
    }
  for (int i = 0; i < v.num_nodes(); ++i) {
    if (!swaps_heads_and_tokens(v, i)) continue;
    const int x = v.input(i, 0), o = v.output(i);
    const int a = v.producer(x);
    if (is_attention(v, a) && a < i && v.private_result(x) && plan->transposed_output[static_cast<size_t>(a)] < 0) {
      plan->transposed_output[static_cast<size_t>(a)] = o;
      plan->folded_permute[static_cast<size_t>(i)] = true;
    } else if (v.consumers(o) > 0 && foldable_reads[static_cast<size_t>(o)] == v.consumers(o) &&
               first_read[static_cast<size_t>(o)] > i && !v.kind_is(x, fb::TensorKind::State)) {
      plan->transposed_source[static_cast<size_t>(o)] = x;
      plan->folded_permute[static_cast<size_t>(i)] = true;
    }
  }
}

// RoPEs read only by an attention, as q or k (dispatch_fusion.h).
void plan_ropes(const GraphView& v, FusionPlan* plan) {
  for (int a = 0; a < v.num_nodes(); ++a) {
    if (!is_attention(v, a)) continue;
    for (int slot = 0; slot < 2; ++slot) {
      const int x = v.input(a, static_cast<uint32_t>(slot)), r = v.producer(x);
      // The RoPE before the attention (its lowering checks the inputs the attention then reads).
      if (r < 0 || r >= a || x == v.input(a, 1 - slot) || plan->folded_rope[static_cast<size_t>(r)]) continue;
      const fb::Node* n = v.node(r);
      if (n->shader() != fb::Shader::Rope || n->params_type() != fb::Params::RopeParams || v.num_inputs(r) != 3 ||
          !v.private_result(x) || !v.is_f32(v.input(r, 0)) || !v.is_f32(v.input(r, 1)) || !v.is_f32(v.input(r, 2)))
        continue;
      plan->folded_rope[static_cast<size_t>(r)] = true;
      (slot == 0 ? plan->q_rope : plan->k_rope)[static_cast<size_t>(a)] = r;
    }
  }
}

// A relu / clamp / hardtanh / silu / sigmoid / gelu (node i) of a plain conv's (or linear's) private result, or of a private add that
// an earlier node of the plan fused into a conv: the conv applies it (dispatch_fusion.h).
bool plan_conv_activation(const GraphView& v, int i, FusionPlan* plan) {
  const fb::Node* n = v.node(i);
  const fb::UnaryParams* p = n->params_as_UnaryParams();
  if (n->shader() != fb::Shader::Unary || p == nullptr || v.num_inputs(i) != 1) return false;
  if (p->op() != fb::UnaryOp::Relu && p->op() != fb::UnaryOp::Clamp && p->op() != fb::UnaryOp::Hardtanh &&
      p->op() != fb::UnaryOp::Silu && p->op() != fb::UnaryOp::Sigmoid && p->op() != fb::UnaryOp::Gelu &&
      p->op() != fb::UnaryOp::GeluTanh)
    return false;
  const int x = v.input(i, 0), o = v.output(i);
  if (!v.valid(o) || !v.is_f32(o) || !v.private_result(x) || !v.same_sizes(x, o)) return false;
  int c = v.producer(x);
  if (c >= 0 && !v.plain_conv(c)) c = plan->conv_residual[static_cast<size_t>(c)];  // through a fused add
  if (!v.plain_conv(c)) return false;
  plan->conv_activation[static_cast<size_t>(i)] = c;
  return true;
}

// The float linear or conv producing `id` (maybe through an activation it applies, a Unary read
// only there), when `id` is read only by the excitation chain; else -1.
int excitation_linear(const GraphView& v, int id) {
  if (!v.private_result(id)) return -1;
  int f = v.producer(id);
  if (f >= 0 && v.node(f)->shader() == fb::Shader::Unary && v.num_inputs(f) == 1) {
    const int t = v.input(f, 0);
    if (!v.private_result(t)) return -1;
    f = v.producer(t);
  }
  if (f < 0) return -1;
  const fb::Node* n = v.node(f);
  if (const fb::LinearParams* l = n->params_as_LinearParams())
    return n->shader() == fb::Shader::Matmul && l->weight_bits() == 0 ? f : -1;
  return n->shader() == fb::Shader::Conv2d && n->params_as_Conv2dParams() != nullptr ? f : -1;
}

// A scale s = act2(fc2(act1(fc1(p)))) the conv c reading it may compute (dispatch_fusion.h).
void plan_excitation(const GraphView& v, int c, int s, FusionPlan* plan) {
  const int f2 = excitation_linear(v, s);
  const int f1 = f2 >= 0 ? excitation_linear(v, v.input(f2, 0)) : -1;
  if (f1 < 0 || f1 >= f2 || f2 >= c) return;
  plan->excite_fc1[static_cast<size_t>(c)] = f1;
  plan->excite_fc2[static_cast<size_t>(c)] = f2;
}

// Squeeze-and-excitation muls read only by a conv as its input (dispatch_fusion.h).
void plan_scaled_inputs(const GraphView& v, FusionPlan* plan) {
  for (int c = 0; c < v.num_nodes(); ++c) {
    const fb::Node* cn = v.node(c);
    if (cn->shader() != fb::Shader::Conv2d || cn->params_as_Conv2dParams() == nullptr) continue;
    const int x = v.input(c, 0), m = v.producer(x);
    if (m < 0 || m >= c || !v.private_result(x)) continue;
    const fb::Node* mn = v.node(m);
    const fb::BinaryParams* bp = mn->params_as_BinaryParams();
    if (mn->shader() != fb::Shader::Binary || bp == nullptr || bp->op() != fb::BinaryOp::Mul || v.num_inputs(m) != 2)
      continue;
    const int a = v.input(m, 0), b = v.input(m, 1);
    if (!v.valid(a) || !v.valid(b) || !v.is_f32(a) || !v.is_f32(b) || v.kind_is(a, fb::TensorKind::State) ||
        v.kind_is(b, fb::TensorKind::State))
      continue;
    const auto *sa = v.tensor(a)->sizes(), *sb = v.tensor(b)->sizes(), *sx = v.tensor(x)->sizes();
    if (sa == nullptr || sb == nullptr || sx == nullptr || sa->size() != 4 || sb->size() != 4 || sx->size() != 4) continue;
    const bool a_full = v.same_sizes(a, x);
    const auto* full = a_full ? sa : sb;
    const auto* scale = a_full ? sb : sa;
    if (!v.same_sizes(a_full ? a : b, x) || scale->Get(0) != full->Get(0) || scale->Get(1) != full->Get(1) ||
        scale->Get(2) != 1 || scale->Get(3) != 1)
      continue;
    plan->scaled_input[static_cast<size_t>(c)] = m;
    plan_excitation(v, c, a_full ? b : a, plan);
  }
}

// Weight-only linears of the same x computed by one dispatch (dispatch_fusion.h, SPLIT): every
// linear without bias whose dispatch no other fusion changes.
void plan_splits(const GraphView& v, FusionPlan* plan) {
  std::vector<bool> taken(static_cast<size_t>(v.num_nodes()), false);
  for (int i = 0; i < v.num_nodes(); ++i) {
    for (int l : {plan->residual_linear[static_cast<size_t>(i)], plan->gate_linear[static_cast<size_t>(i)],
                  plan->up_linear[static_cast<size_t>(i)]})
      if (l >= 0) taken[static_cast<size_t>(l)] = true;
  }
  auto free_linear = [&](int i) {
    return v.wq_linear(i) != nullptr && !taken[static_cast<size_t>(i)] && v.input(i, 2) < 0 && v.valid(v.input(i, 0));
  };
  for (int i = 0; i < v.num_nodes(); ++i) {
    if (!free_linear(i)) continue;
    const fb::LinearParams* p = v.wq_linear(i);
    int found = 0;
    for (int j = i + 1; j < v.num_nodes() && found < 2; ++j) {
      const fb::LinearParams* q = v.wq_linear(j);
      if (!free_linear(j) || v.input(j, 0) != v.input(i, 0) || q->weight_bits() != p->weight_bits() ||
          q->group_size() != p->group_size())
        continue;
      taken[static_cast<size_t>(j)] = true;
      plan->split_leader[static_cast<size_t>(j)] = i;
      plan->split_members[static_cast<size_t>(i)][static_cast<size_t>(found++)] = j;
    }
    taken[static_cast<size_t>(i)] = true;
  }
}

}  // namespace

FusionPlan plan_fusions(const fb::Graph& g) {
  GraphView v(g);
  const size_t n = static_cast<size_t>(v.num_nodes());
  FusionPlan plan;
  plan.folded_norm.assign(n, false);
  plan.norm_source.assign(n, -1);
  plan.residual_linear.assign(n, -1);
  plan.residual_input.assign(n, -1);
  plan.conv_residual.assign(n, -1);
  plan.conv_activation.assign(n, -1);
  plan.scaled_input.assign(n, -1);
  plan.excite_fc1.assign(n, -1);
  plan.excite_fc2.assign(n, -1);
  plan.gate_linear.assign(n, -1);
  plan.up_linear.assign(n, -1);
  plan.split_leader.assign(n, -1);
  plan.split_members.assign(n, {-1, -1});
  plan.folded_permute.assign(n, false);
  plan.transposed_source.assign(static_cast<size_t>(v.num_tensors()), -1);
  plan.transposed_output.assign(n, -1);
  plan.folded_rope.assign(n, false);
  plan.q_rope.assign(n, -1);
  plan.k_rope.assign(n, -1);
  plan.lazy_layout.assign(n, false);
  plan.sdpa_permute.assign(n, -1);
  if (!fusion_enabled()) return plan;
  plan_transposes(v, &plan);
  plan_layouts(v, &plan);
  plan_ropes(v, &plan);
  for (int i = 0; i < v.num_nodes(); ++i) {
    const fb::Node* node = v.node(i);
    if (norm_feeds_only_linears(v, i)) {
      plan.folded_norm[static_cast<size_t>(i)] = true;
      continue;
    }
    if (plan_conv_activation(v, i, &plan)) continue;
    const fb::BinaryParams* bp = node->params_as_BinaryParams();
    if (node->shader() != fb::Shader::Binary || bp == nullptr || v.num_inputs(i) != 2 || !v.valid(v.output(i))) continue;
    const int a = v.input(i, 0), b = v.input(i, 1);
    if (!v.valid(a) || !v.valid(b) || a == b || !v.is_f32(a) || !v.is_f32(b) || !v.same_sizes(a, b)) continue;
    if (bp->op() == fb::BinaryOp::Add && bp->alpha() == 1.0f) {
      for (int which = 0; which < 2; ++which) {
        const int lin = which == 0 ? a : b, r = which == 0 ? b : a;
        const int l = v.producer(lin);
        // r must exist before the linear runs and not change after (not State).
        if (v.wq_linear(l) == nullptr || !v.private_result(lin) || v.producer(r) >= l ||
            v.kind_is(r, fb::TensorKind::State))
          continue;
        plan.residual_linear[static_cast<size_t>(i)] = l;
        plan.residual_input[static_cast<size_t>(i)] = 1 - which;
        break;
      }
      for (int which = 0; which < 2 && plan.residual_linear[static_cast<size_t>(i)] < 0; ++which) {
        // r must exist before the conv runs (of two convs, the later one takes the add). The
        // conv's result may reach the add through views (a linear's rows reshaped back).
        const int conv = which == 0 ? a : b, r = which == 0 ? b : a;
        const int c = v.producer(alias_source(v, conv));
        if (!v.plain_conv(c) || !v.private_result(conv) || v.producer(r) >= c || v.kind_is(r, fb::TensorKind::State))
          continue;
        plan.conv_residual[static_cast<size_t>(i)] = c;
        plan.residual_input[static_cast<size_t>(i)] = 1 - which;
        break;
      }
    } else if (bp->op() == fb::BinaryOp::SiluMul) {
      const int lg = v.producer(a), lu = v.producer(b);
      const fb::LinearParams *pg = v.wq_linear(lg), *pu = v.wq_linear(lu);
      if (pg == nullptr || pu == nullptr || lg == lu || !v.private_result(a) || !v.private_result(b)) continue;
      if (v.input(lg, 0) != v.input(lu, 0) || v.input(lg, 2) >= 0 || v.input(lu, 2) >= 0 ||
          pg->weight_bits() != pu->weight_bits() || pg->group_size() != pu->group_size())
        continue;
      plan.gate_linear[static_cast<size_t>(i)] = lg;
      plan.up_linear[static_cast<size_t>(i)] = lu;
    }
  }
  plan_splits(v, &plan);
  plan_scaled_inputs(v, &plan);
  for (int j = 0; j < v.num_nodes(); ++j) {  // the linears a folded RMSNorm feeds
    const int norm = v.producer(v.input(j, 0));
    if (v.wq_linear(j) != nullptr && norm >= 0 && plan.folded_norm[static_cast<size_t>(norm)])
      plan.norm_source[static_cast<size_t>(j)] = norm;
  }
  return plan;
}

}  // namespace vulkan
}  // namespace ember
