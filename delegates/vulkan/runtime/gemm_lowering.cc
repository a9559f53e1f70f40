// The Lowering members that emit conv2d_gemm.comp and matmul.comp dispatches for convolutions
// and linear layers, and the epilogue fusions that patch them (dispatch_fusion.h).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "delegates/vulkan/runtime/lowering.h"

namespace ember {
namespace vulkan {
namespace lowering {

EpilogueSlots epilogue_slots(ShaderId s) {
  if (s == ShaderId::Matmul) return {8, 9, 10, 3};
  return {17, 18, 19, s == ShaderId::Conv2dGemm ? kConvGemmOut : 3};
}

// Moves each conv2d_gemm.comp dispatch's sizes, split and epilogue from its specialisation
// values into its push constants and zeroes them there, so dispatches that differ only in those
// share a pipeline; a reduction (PHASE 1) ignores the window and the input scale too.
void pack_gemm_push(std::vector<Dispatch>& dispatches, bool coop_matrix_f16) {
  for (Dispatch& d : dispatches) {
    if (d.shader != ShaderId::Conv2dGemm) continue;
    d.push.resize(sizeof(uint32_t) * (sizeof(kConvGemmPushFrom) / sizeof(kConvGemmPushFrom[0])));
    for (size_t i = 0; i < sizeof(kConvGemmPushFrom) / sizeof(kConvGemmPushFrom[0]); ++i) {
      std::memcpy(d.push.data() + i * sizeof(uint32_t), &d.spec[kConvGemmPushFrom[i]], sizeof(uint32_t));
      d.spec[kConvGemmPushFrom[i]] = 0;
    }
    if (d.spec[kConvPhase] == 1) {
      for (size_t i = kConvWindow; i < kConvWindowEnd; ++i) d.spec[i] = 0;
      d.spec[kConvInScale] = 0;
    } else if (coop_matrix_f16) {
      d.shader = ShaderId::Conv2dGemmCoopFp16;  // same constants and push layout (-DCOOP_MATRIX)
    }
  }
}

// The squeeze-and-excitation scale this conv reads (bindings[kConvGemmScale], IN_SCALE 1) is
// act2(fc2(act1(fc1(p)))) of two matmul.comp dispatches (a row per image) the plan lets it take
// over (dispatch_fusion.h): compute act2(fc2(.)) in the conv's workgroups instead (IN_SCALE 3:
// fc1's output in the scale's binding, fc2's weight and bias in the excitation bindings, the
// sizes and activations in the spec) and drop fc2's dispatch. `spec` holds the conv's sizes (indices 0,
// 1, 15: images, in channels, groups). EMBER_VULKAN_EXCITE_IN_CONV: 1 keeps both dispatches, 2
// computes fc1 in the conv too (measuring).
void Lowering::excite_in_conv(std::vector<uint32_t>& spec, std::vector<int>& bindings) {
  // fc1 in every workgroup costs more than its dispatch (H200, EfficientNet-B0's 1152 x 48:
  // its projection convs 16 -> 30 us), fc2 for the workgroup's channels less (16 -> 19 us against
  // a ~5 us dispatch): by default fc1 keeps its dispatch (IN_SCALE 3).
  const long mode = tuning_number("EMBER_VULKAN_EXCITE_IN_CONV");
  if (mode == 1) return;         // measuring: both linears keep their dispatches
  const bool whole = mode == 2;  // measuring: fc1 too in the conv (IN_SCALE 2)
  const int f1 = plan_.excite_fc1[index_], f2 = plan_.excite_fc2[index_];
  const int d1 = f1 >= 0 ? node_dispatch_[static_cast<size_t>(f1)] : -1;
  const int d2 = f2 >= 0 ? node_dispatch_[static_cast<size_t>(f2)] : -1;
  if (d1 < 0 || d2 < 0 || (!dead_.empty() && (dead_[static_cast<size_t>(d1)] || dead_[static_cast<size_t>(d2)]))) return;
  const Dispatch &l1 = d_[static_cast<size_t>(d1)], &l2 = d_[static_cast<size_t>(d2)];
  // matmul.comp's spec: batch, m, k, n, ..., has_bias 7, act 8 .. 10, mode 11: a row per image.
  auto row_per_image = [&](const Dispatch& d) {
    return d.shader == ShaderId::Matmul && d.spec.size() == 12 && d.spec[0] == 1 && d.spec[1] == spec[0] && d.spec[7] == 1;
  };
  const int64_t channels = static_cast<int32_t>(spec[1]), hidden = static_cast<int32_t>(l1.spec[3]);
  if (!row_per_image(l1) || !row_per_image(l2) || spec[15] != 1 ||
      l2.bindings[3] != bindings[kConvGemmScale] || l2.bindings[0] != l1.bindings[3] ||
      static_cast<int32_t>(l1.spec[2]) != channels || static_cast<int32_t>(l2.spec[3]) != channels ||
      static_cast<int32_t>(l2.spec[2]) != hidden || channels > kExciteMaxChannels || hidden < 1 || hidden > kExciteMaxHidden)
    return;
  bindings[kConvGemmScale] = whole ? l1.bindings[0] : l2.bindings[0];  // the pooled means, or fc1's output
  if (whole) {
    bindings[kConvGemmExcite] = l1.bindings[1];
    bindings[kConvGemmExcite + 1] = l1.bindings[2];
  }
  bindings[kConvGemmExcite + 2] = l2.bindings[1];
  bindings[kConvGemmExcite + 3] = l2.bindings[2];
  spec[kConvInScale] = whole ? 2 : 3;
  const uint32_t ex[] = {ibits(hidden), l1.spec[8], l1.spec[9], l1.spec[10], l2.spec[8], l2.spec[9], l2.spec[10]};
  std::copy(std::begin(ex), std::end(ex), spec.begin() + kConvExcite);
  if (whole) dead_[static_cast<size_t>(d1)] = true;
  dead_[static_cast<size_t>(d2)] = true;
}

// conv2d_gemm.comp's dispatches for this node: the GEMM and, when its k range is split, the
// reduction (spec: the shader's constants 1..20; rows_major: a linear layer). Recorded as the
// node's dispatches for the epilogue fusions.
void Lowering::add_gemm(std::vector<uint32_t> spec, const ConvGemmPlan& gemm, int x, int w, int b, int64_t outputs,
                        bool rows_major) {
  const int partial = gemm.splits > 1 ? scratch(gemm.partial_floats) : out_;
  // Everything stays in `spec` while fusions may patch it; pack_gemm_push() then moves the
  // sizes, the split and the epilogue into the push constants (conv2d_gemm.comp).
  spec.insert(spec.end(), {ibits(gemm.splits), ibits(gemm.chunk), 0, 0, ibits(rows_major), 0, 0, 0, 0, 0, 0, 0, 0});
  // A squeeze-and-excitation multiply producing x (dispatch_fusion.h): read its operands, scale
  // as the patches are gathered, and drop its dispatch.
  std::vector<int> bindings{x, w, b >= 0 ? b : w, x, x, x, x, x, x, partial, out_};
  if (!rows_major) {
    const int mul = plan_.scaled_input[index_];
    const int md = mul >= 0 ? node_dispatch_[static_cast<size_t>(mul)] : -1;
    if (md >= 0 && d_[static_cast<size_t>(md)].shader == ShaderId::Binary && d_[static_cast<size_t>(md)].bindings[2] == x) {
      const fb::Node* m = g_nodes_->Get(static_cast<uint32_t>(mul));
      const int ma = m->inputs()->Get(0), mb = m->inputs()->Get(1);
      const bool a_full = sz(ma) == sz(x);
      bindings[kConvGemmX] = a_full ? ma : mb;
      bindings[kConvGemmScale] = a_full ? mb : ma;
      spec[kConvInScale] = 1;
      dead_.resize(d_.size(), false);
      dead_[static_cast<size_t>(md)] = true;
      excite_in_conv(spec, bindings);
    }
  }
  node_dispatch_[index_] = static_cast<int>(d_.size());
  add(ShaderId::Conv2dGemm, spec, bindings, gemm.workgroups * int64_t{kConvGemmWorkgroup}, {}, kConvGemmWorkgroup);
  if (gemm.splits > 1) {
    spec[kConvPhase] = 1;
    add(ShaderId::Conv2dGemm, spec, bindings, outputs, {}, kConvGemmWorkgroup);
  }
}

// y[m, n] = x[m, k] . w[n, k] + b[n] (b < 0: none), clamped when `act`: matmul.comp, tiled for
// >= 16 rows, else a workgroup per output streaming its weight row (row_dot).
void Lowering::add_linear(int x, int w, int b, int64_t m, int64_t k, int64_t n, bool act, float act_min, float act_max) {
  // Many rows: conv2d_gemm.comp's tiles and split reduction (ROWS_MAJOR: a 1x1 convolution of
  // one image whose m pixels are x's rows).
  const bool static_shapes = t_[x].dynamic_mask == 0 && t_[out_].dynamic_mask == 0;
  const ConvGemmPlan gemm = conv_gemm_plan(1, 1, n, m, k, limits_.max_workgroup, limits_.max_shared_bytes, static_shapes);
  if (gemm.use) {
    const uint32_t spec[] = {1, ibits(k), ibits(m), 1, ibits(n), ibits(m), 1, 1, 1, 1, 1, 0, 0, 1, 1, 1,
                             ibits(b >= 0), ibits(act), fbits(act_min), fbits(act_max)};
    add_gemm(std::vector<uint32_t>(std::begin(spec), std::end(spec)), gemm, x, w, b, numel(sz(out_)), true);
    return;
  }
  const bool tiled = use_tiled(m >= kMinTiledRows);
  // Few rows (LLM decoding): a workgroup per output streams its weight row coalesced.
  const bool row_dot = !tiled && tuning_choice("EMBER_VULKAN_ROW_DOT", k >= kWorkgroupSize);
  // row_dot: 32 invocations per output, WG / 32 outputs per workgroup.
  const uint32_t wg = row_dot ? wide_workgroup() : kWorkgroupSize;
  const int64_t invocations = tiled ? tiles(m) * tiles(n) * int64_t{kWorkgroupSize}
                              : row_dot ? m * ((n + wg / 32 - 1) / (wg / 32)) * int64_t{wg} : m * n;
  node_dispatch_[index_] = static_cast<int>(d_.size());
  add(ShaderId::Matmul,
      {1, ibits(m), ibits(k), ibits(n), 0, 0, 1, ibits(b >= 0), ibits(act), fbits(act_min), fbits(act_max),
       ibits(tiled ? 1 : row_dot ? 2 : 0)},
      {x, w, b >= 0 ? b : w, out_}, invocations, {}, wg);
}

// The dispatches of conv or linear node `node` (its GEMM and reduction, its direct loop, or its
// matmul.comp dispatch), in order; empty when it has none.
std::vector<Dispatch*> Lowering::conv_dispatches(int node) {
  std::vector<Dispatch*> r;
  const int di = node >= 0 ? node_dispatch_[static_cast<size_t>(node)] : -1;
  if (di < 0) return r;
  Dispatch& d = d_[static_cast<size_t>(di)];
  if (d.shader != ShaderId::Conv2d && d.shader != ShaderId::Conv2dGemm && d.shader != ShaderId::Matmul) return r;
  r.push_back(&d);
  if (d.shader == ShaderId::Conv2dGemm && d.spec[kConvSplits] > 1) r.push_back(&d_[static_cast<size_t>(di) + 1]);
  return r;
}

// This add (inputs a, b) runs in the epilogue of the conv the fusion plan names, when that conv
// took the GEMM path, still writes the add's conv operand and has no activation: patches its
// dispatches and returns true.
bool Lowering::fuse_residual_into_conv(const fb::BinaryParams* p, int a, int b) {
  const size_t i = index_;
  if (p->op() != fb::BinaryOp::Add || plan_.conv_residual[i] < 0 || sz(a) != sz(b)) return false;
  std::vector<Dispatch*> ds = conv_dispatches(plan_.conv_residual[i]);
  const int conv_out = plan_.residual_input[i] == 0 ? b : a, r = plan_.residual_input[i] == 0 ? a : b;
  if (ds.empty() || ds[0]->shader != ShaderId::Conv2dGemm) return false;
  for (Dispatch* d : ds)  // the conv writes conv_out, or what conv_out aliases (a view of it)
    if (t_[d->bindings[kConvGemmOut]].root != t_[conv_out].root || d->spec[epilogue_slots(d->shader).act] != 0 ||
        d->spec[kConvHasResidual] != 0)
      return false;
  for (Dispatch* d : ds) {
    d->spec[kConvHasResidual] = 1;
    d->bindings[kConvGemmResidual] = r;
    d->bindings[kConvGemmOut] = out_;
  }
  return true;
}

// This relu / clamp / hardtanh / silu / sigmoid / gelu (input x) is applied by the conv or linear the fusion plan names (maybe
// through an add fused into it), when that conv still writes x and has no activation.
bool Lowering::fuse_activation_into_conv(const fb::UnaryParams* p, int x) {
  const int c = plan_.conv_activation[index_];
  std::vector<Dispatch*> ds = conv_dispatches(c);
  if (ds.empty()) return false;
  const EpilogueSlots slot = epilogue_slots(ds[0]->shader);
  for (Dispatch* d : ds)
    if (d->bindings[slot.out] != x || d->spec[slot.act] != 0) return false;
  const bool relu = p->op() == fb::UnaryOp::Relu;
  const uint32_t kind = p->op() == fb::UnaryOp::Silu      ? kConvActSilu
                        : p->op() == fb::UnaryOp::Sigmoid ? kConvActSigmoid
                        : p->op() == fb::UnaryOp::Gelu    ? kConvActGelu
                        : p->op() == fb::UnaryOp::GeluTanh ? kConvActGeluTanh
                                                           : kConvActClamp;
  for (Dispatch* d : ds) {
    d->spec[slot.act] = kind;
    d->spec[slot.act_min] = fbits(relu ? 0.0f : p->min());
    d->spec[slot.act_max] = fbits(relu ? INFINITY : p->max());
    d->bindings[slot.out] = out_;
  }
  return true;
}

}  // namespace lowering
}  // namespace vulkan
}  // namespace ember
