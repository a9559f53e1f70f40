#include "delegates/vulkan/runtime/graph_lowering.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "delegates/vulkan/runtime/lowering.h"
#include "delegates/vulkan/runtime/weight_only_split.h"

namespace ember {
namespace vulkan {
namespace lowering {

// Inputs [x, weight (Int8 / UInt8 packed), bias or -1, scales]; LinearParams.weight_bits 8 or 4.
Error Lowering::linear_weight_only(const fb::LinearParams* p) {
  EMBER_TRY(need_inputs(2, 4));
  const int x = in(0), w = in(1), b = in(2), s = in(3);
  if (num_in() != 4 || s < 0) return bad("needs [x, weight, bias or -1, scales]");
  EMBER_TRY(need_f32({x, b, s, out_}));
  if (p->activation() != fb::Activation::None) return unsupported("an activation on a weight-only linear");
  const int bits = p->weight_bits();
  EMBER_TRY(need_quantized_weight(w, bits));
  Sizes out;
  const std::string e = infer_linear_weight_only(sz(x), sz(w), sz(s), b >= 0 ? numel(sz(b)) : -1, bits, p->group_size(), &out);
  if (!e.empty()) return shape_error(e);
  EMBER_TRY(check_out(out));
  // Computed by the dispatch of the first linear of its group (SPLIT, dispatch_fusion.h), whose
  // lowering read this node's weights; this one checked its own shapes above.
  if (plan_.split_leader[index_] >= 0) {
    if (node_dispatch_[static_cast<size_t>(plan_.split_leader[index_])] < 0) return bad("its split group has no dispatch");
    return Error::Ok;
  }
  const int64_t k = sz(x).back(), m = numel(sz(x)) / k;
  // The outputs of this dispatch: this node's, then its split group's (unused slots repeat it).
  int64_t ns[3] = {out.back(), 0, 0};
  int ws[3] = {w, w, w}, ss[3] = {s, s, s}, ys[3] = {out_, out_, out_};
  for (size_t i = 0; i < 2; ++i) {
    const int j = plan_.split_members[index_][i];
    if (j < 0) break;
    EMBER_TRY(split_member(j, x, bits, p->group_size(), &ns[i + 1], &ws[i + 1], &ss[i + 1], &ys[i + 1]));
  }
  const int64_t n = ns[0] + ns[1] + ns[2];
  const WeightOnlySplit split = weight_only_split(m, n, k, bits, p->group_size(), limits_.max_workgroup);
  const uint32_t wg = split.workgroup;
  const int64_t per_group = wg / split.threads * split.rows;
  int64_t groups = 0;
  for (int64_t rows : ns) groups += m * ((rows + per_group - 1) / per_group);
  // A folded RMSNorm (dispatch_fusion.h): read its input and weight, normalise here.
  int xin = x, gamma = x;
  float eps = 0.0f;
  const int norm = plan_.norm_source[index_];
  if (norm >= 0) {
    const fb::Node* rms = g_nodes_->Get(static_cast<uint32_t>(norm));
    xin = rms->inputs()->Get(0);
    gamma = rms->inputs()->Get(1);
    eps = rms->params_as_LayerNormParams()->eps();
    if (sz(xin) != sz(x) || numel(sz(gamma)) != k) return bad("its RMSNorm input does not match");
  }
  add(ShaderId::LinearWq,
      {ibits(m), ibits(k), ibits(ns[0]), ibits(bits), ibits(p->group_size()), ibits(b >= 0), ibits(split.threads),
       ibits(split.rows), 0, ibits(norm >= 0), fbits(eps), 0, ibits(split.units), ibits(ns[1]), ibits(ns[2]),
       ibits(split.quads)},
      {xin, w, b >= 0 ? b : x, s, x, gamma, ws[1], ss[1], ws[2], ss[2], ys[0], ys[1], ys[2]}, groups * int64_t{wg}, {}, wg);
  node_dispatch_[index_] = static_cast<int>(d_.size()) - 1;
  return Error::Ok;
}

// Node j of the split group of the linear being lowered (same x, `bits`, `group`, no bias): its
// rows, weight, scales and output. Checks what the dispatch reads; j's own lowering, later,
// checks the rest.
Error Lowering::split_member(int j, int x, int bits, int group, int64_t* rows, int* w, int* s, int* y) {
  const fb::Node* n = g_nodes_->Get(static_cast<uint32_t>(j));
  const auto valid = [&](int id) { return id >= 0 && static_cast<size_t>(id) < t_.size() && t_[id].available; };
  if (n->inputs() == nullptr || n->inputs()->size() != 4 || n->outputs() == nullptr || n->outputs()->size() != 1)
    return bad("split linear %d needs [x, weight, -1, scales] and one output", j);
  *w = n->inputs()->Get(1);
  *s = n->inputs()->Get(3);
  *y = n->outputs()->Get(0);
  if (n->inputs()->Get(0) != x || !valid(*w) || !valid(*s) || *y < 0 || static_cast<size_t>(*y) >= t_.size())
    return bad("split linear %d reads other tensors", j);
  EMBER_TRY(need_quantized_weight(*w, bits));
  EMBER_TRY(need_f32({*s, *y}));
  Sizes out;
  const std::string e = infer_linear_weight_only(sz(x), sz(*w), sz(*s), -1, bits, group, &out);
  if (!e.empty()) return bad("split linear %d: %s", j, e.c_str());
  *rows = out.back();
  return Error::Ok;
}

// Inputs [weight (Int8 / UInt8 packed), indices, scales]; EmbeddingParams.weight_bits 8 or 4.
Error Lowering::embedding_weight_only(const fb::EmbeddingParams* p) {
  EMBER_TRY(need_inputs(3, 3));
  const int w = in(0), idx = in(1), s = in(2);
  EMBER_TRY(need_f32({s, out_}));
  const int bits = p->weight_bits();
  EMBER_TRY(need_quantized_weight(w, bits));
  if (!is_index(idx)) return unsupported("embedding indices must be int32 or int64");
  Sizes out;
  const std::string e = infer_embedding_weight_only(sz(w), sz(s), sz(idx), bits, p->group_size(), &out);
  if (!e.empty()) return shape_error(e);
  EMBER_TRY(check_out(out));
  const int64_t d = out.back();
  add(ShaderId::EmbeddingWq,
      {ibits(numel(sz(idx))), ibits(d), ibits(sz(w)[0]), ibits(is_int64(idx)), ibits(bits), ibits(p->group_size())},
      {w, idx, s, out_}, numel(out));
  return Error::Ok;
}

// linear_wq.comp's specialisation constants (after the workgroup size) and bindings that
// fusion rewrites.
enum LinearWqSpec { kWqHasBias = 5, kWqHasResidual = 8, kWqGated = 11 };
enum LinearWqBinding { kWqWeight = 1, kWqScales = 3, kWqResidual = 4, kWqWeight2 = 6, kWqScales2 = 7, kWqOut = 10 };
// A fused epilogue's output: y, with y2 and y3 (unused without SPLIT) on the same buffer.
void set_wq_output(Dispatch& d, int out) {
  for (int i = 0; i < 3; ++i) d.bindings[static_cast<size_t>(kWqOut + i)] = out;
}

// This add or silu_mul (inputs a, b, shapes checked) runs inside the weight-only linear
// dispatch(es) the fusion plan names: patches them and returns true. The plan is structural, so
// the same patches happen at every dynamic size.
bool Lowering::fuse_into_linear(const fb::BinaryParams* p, int a, int b) {
  if (sz(a) != sz(b)) return false;
  const size_t i = index_;
  if (p->op() == fb::BinaryOp::Add && plan_.residual_linear[i] >= 0) {
    const int di = node_dispatch_[static_cast<size_t>(plan_.residual_linear[i])];
    if (di < 0) return false;
    Dispatch& d = d_[static_cast<size_t>(di)];
    d.spec[kWqHasResidual] = 1;
    d.bindings[kWqResidual] = plan_.residual_input[i] == 0 ? a : b;
    set_wq_output(d, out_);
    return true;
  }
  if (p->op() == fb::BinaryOp::SiluMul && plan_.gate_linear[i] >= 0) {
    const int dg = node_dispatch_[static_cast<size_t>(plan_.gate_linear[i])];
    const int du = node_dispatch_[static_cast<size_t>(plan_.up_linear[i])];
    if (dg < 0 || du < 0) return false;
    const Dispatch gate = d_[static_cast<size_t>(dg)], up = d_[static_cast<size_t>(du)];
    // The same x, normalisation and shape; neither with bias or residual.
    if (gate.spec != up.spec || gate.bindings[0] != up.bindings[0] || gate.spec[kWqHasBias] != 0) return false;
    Dispatch& d = d_[static_cast<size_t>(std::max(dg, du))];
    d.spec[kWqGated] = 1;
    d.bindings[kWqWeight] = gate.bindings[kWqWeight];
    d.bindings[kWqScales] = gate.bindings[kWqScales];
    d.bindings[kWqWeight2] = up.bindings[kWqWeight];
    d.bindings[kWqScales2] = up.bindings[kWqScales];
    set_wq_output(d, out_);
    dead_.resize(d_.size(), false);
    dead_[static_cast<size_t>(std::min(dg, du))] = true;
    return true;
  }
  return false;
}

Error Lowering::dispatch_op() {
  Sizes out;
  std::string e;
  switch (node_->params_type()) {
    case fb::Params::Conv2dParams: {
      const fb::Conv2dParams* p = node_->params_as_Conv2dParams();
      EMBER_TRY(need_shader(fb::Shader::Conv2d));
      EMBER_TRY(need_inputs(2, 3));
      int x = in(0), w = in(1), b = in(2);
      EMBER_TRY(need_f32({x, w, b, out_}));
      std::vector<int32_t> st = ints(p->stride()), pd = ints(p->padding()), dl = ints(p->dilation());
      Window2d win;
      e = read_pair(st.data(), st.size(), "stride", true, 1, &win.sh, &win.sw);
      if (e.empty()) e = read_pair(pd.data(), pd.size(), "padding", true, 0, &win.ph, &win.pw);
      if (e.empty()) e = read_pair(dl.data(), dl.size(), "dilation", true, 1, &win.dh, &win.dw);
      if (e.empty()) e = infer_conv2d(sz(x), sz(w), b >= 0 ? numel(sz(b)) : -1, win, p->groups(), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes xs = sz(x), ws = sz(w);  // copies: a scratch tensor may be appended below
      bool act = p->activation() == fb::Activation::Clamp;
      const uint32_t common[] = {ibits(xs[0]), ibits(xs[1]), ibits(xs[2]), ibits(xs[3]), ibits(out[1]), ibits(out[2]),
                                 ibits(out[3]), ibits(ws[2]), ibits(ws[3]), ibits(win.sh), ibits(win.sw), ibits(win.ph),
                                 ibits(win.pw), ibits(win.dh), ibits(win.dw), ibits(p->groups()), ibits(b >= 0), ibits(act),
                                 fbits(p->act_min()), fbits(p->act_max())};
      // A 1x1 kernel over a 1x1 image (squeeze-and-excitation layers) is a linear layer:
      // matmul.comp's workgroup per output, not one invocation looping over every input channel.
      if (xs[2] == 1 && xs[3] == 1 && ws[2] == 1 && ws[3] == 1 && win.ph == 0 && win.pw == 0 && p->groups() == 1 &&
          tuning_choice("EMBER_VULKAN_CONV_AS_LINEAR", true)) {
        add_linear(x, w, b, xs[0], xs[1], out[1], act, p->act_min(), p->act_max());
        return Error::Ok;
      }
      const int64_t ocg = out[1] / p->groups(), plane = out[2] * out[3];
      const int64_t depth = (xs[1] / p->groups()) * ws[2] * ws[3];
      const bool static_shapes = t_[x].dynamic_mask == 0 && t_[out_].dynamic_mask == 0;
      const ConvGemmPlan gemm = conv_gemm_plan(xs[0], p->groups(), ocg, plane, depth, limits_.max_workgroup, limits_.max_shared_bytes, static_shapes);
      if (gemm.use) {  // conv2d_gemm.comp: tiles, and a reducing dispatch when the k range is split
        add_gemm(std::vector<uint32_t>(std::begin(common), std::end(common)), gemm, x, w, b, numel(out), false);
        return Error::Ok;
      }
      // Split the reduction 8 ways when it is deep and the outputs are too few to fill a GPU.
      const bool ksplit = tuning_choice("EMBER_VULKAN_KSPLIT", depth >= 512 && numel(out) < 131072);
      const int64_t invocations = ksplit ? (numel(out) + 7) / 8 * int64_t{kWorkgroupSize} : numel(out);
      std::vector<uint32_t> spec(std::begin(common), std::end(common));
      spec.push_back(ibits(ksplit));
      node_dispatch_[index_] = static_cast<int>(d_.size());
      add(ShaderId::Conv2d, spec, {x, w, b >= 0 ? b : w, out_}, invocations);
      return Error::Ok;
    }
    case fb::Params::LinearParams: {
      const fb::LinearParams* p = node_->params_as_LinearParams();
      EMBER_TRY(need_shader(fb::Shader::Matmul));
      if (p->weight_bits() != 0) return linear_weight_only(p);
      EMBER_TRY(need_inputs(2, 3));
      int x = in(0), w = in(1), b = in(2);
      EMBER_TRY(need_f32({x, w, b, out_}));
      e = infer_linear(sz(x), sz(w), b >= 0 ? numel(sz(b)) : -1, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      int64_t k = sz(w)[1], n = sz(w)[0], m = numel(sz(x)) / k;
      add_linear(x, w, b, m, k, n, p->activation() == fb::Activation::Clamp, p->act_min(), p->act_max());
      return Error::Ok;
    }
    case fb::Params::MatmulParams: {
      EMBER_TRY(need_shader(fb::Shader::Matmul));
      EMBER_TRY(need_inputs(2, 2));
      int a = in(0), b = in(1);
      EMBER_TRY(need_f32({a, b, out_}));
      e = infer_matmul(sz(a), sz(b), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes &as = sz(a), &bs = sz(b);
      int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
      int64_t batch = prod(out, 0, out.size() - 2);
      int64_t a_batch = prod(as, 0, as.size() - 2), b_batch = prod(bs, 0, bs.size() - 2);
      // Each operand's batch must be the full output batch (same dims) or a single matrix.
      auto batch_stride = [&](const Sizes& s, int64_t nb, int64_t mat, int64_t* stride) {
        if (nb == 1) { *stride = 0; return true; }
        Sizes ob(out.begin(), out.end() - 2), sb(s.begin(), s.end() - 2);
        while (sb.size() < ob.size()) sb.insert(sb.begin(), 1);
        if (sb != ob) return false;
        *stride = mat;
        return true;
      };
      int64_t sa = 0, sb = 0;
      if (!batch_stride(as, a_batch, m * k, &sa) || !batch_stride(bs, b_batch, k * n, &sb))
        return unsupported("partially broadcast batch dims %s @ %s", sizes_str(as).c_str(), sizes_str(bs).c_str());
      const bool tiled = use_tiled(m >= kMinTiledRows);
      add(ShaderId::Matmul,
          {ibits(batch), ibits(m), ibits(k), ibits(n), ibits(sa), ibits(sb), 0, 0, 0, 0, 0, ibits(tiled)},
          {a, b, a, out_}, tiled ? batch * tiles(m) * tiles(n) * int64_t{kWorkgroupSize} : numel(out));
      return Error::Ok;
    }
    case fb::Params::BinaryParams: {
      const fb::BinaryParams* p = node_->params_as_BinaryParams();
      EMBER_TRY(need_shader(fb::Shader::Binary));
      EMBER_TRY(need_inputs(2, 2));
      int a = in(0), b = in(1);
      EMBER_TRY(need_f32({a, b, out_}));
      if (static_cast<int>(p->op()) > static_cast<int>(fb::BinaryOp::MAX)) return bad("unknown binary op");
      e = infer_broadcast(sz(a), sz(b), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      IndexSpacePush push{};
      push.rank = static_cast<int32_t>(out.size());
      push.numel = static_cast<int32_t>(numel(out));
      for (int which = 0; which < 2; ++which) {
        const Sizes& s = sz(which == 0 ? a : b);
        std::vector<int64_t> st = contiguous(s);
        size_t lead = out.size() - s.size();
        for (size_t i = 0; i < out.size(); ++i) {
          int64_t stride = 0;
          if (i >= lead && s[i - lead] != 1) stride = st[i - lead];
          (which == 0 ? push.s0 : push.s1)[i] = static_cast<int32_t>(stride);
        }
      }
      if (fuse_into_linear(p, a, b) || fuse_residual_into_conv(p, a, b)) return Error::Ok;
      for (size_t i = 0; i < out.size(); ++i) push.sizes[i] = static_cast<int32_t>(out[i]);
      node_dispatch_[index_] = static_cast<int>(d_.size());  // a conv may take it over (scaled_input)
      add(ShaderId::Binary, {static_cast<uint32_t>(p->op()), fbits(p->alpha())}, {a, b, out_},
          numel(out), to_bytes(push));
      return Error::Ok;
    }
    case fb::Params::UnaryParams: {
      const fb::UnaryParams* p = node_->params_as_UnaryParams();
      EMBER_TRY(need_shader(fb::Shader::Unary));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_f32({x, out_}));
      if (static_cast<int>(p->op()) > static_cast<int>(fb::UnaryOp::MAX)) return bad("unknown unary op");
      EMBER_TRY(check_out(sz(x)));
      if (fuse_activation_into_conv(p, x)) return Error::Ok;
      int32_t n = static_cast<int32_t>(numel(sz(x)));
      add(ShaderId::Unary, {static_cast<uint32_t>(p->op()), fbits(p->min()), fbits(p->max())}, {x, out_},
          n, to_bytes(n));
      return Error::Ok;
    }
    case fb::Params::Pool2dParams: {
      const fb::Pool2dParams* p = node_->params_as_Pool2dParams();
      EMBER_TRY(need_shader(fb::Shader::Pool2d));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_f32({x, out_}));
      Window2d win;
      int mode = static_cast<int>(p->mode());
      if (mode > static_cast<int>(fb::PoolMode::MAX)) return bad("unknown pool mode");
      if (p->mode() == fb::PoolMode::AdaptiveAvg) {
        if (sz(out_).size() != 4) return bad("adaptive pool output must be 4-D");
        e = infer_adaptive_pool2d(sz(x), sz(out_)[2], sz(out_)[3], &out);
      } else {
        std::vector<int32_t> k = ints(p->kernel()), st = ints(p->stride()), pd = ints(p->padding()),
                             dl = ints(p->dilation());
        e = read_pair(k.data(), k.size(), "kernel", false, 1, &win.kh, &win.kw);
        if (e.empty()) {
          if (st.empty()) { win.sh = win.kh; win.sw = win.kw; }
          else e = read_pair(st.data(), st.size(), "stride", false, 1, &win.sh, &win.sw);
        }
        if (e.empty()) e = read_pair(pd.data(), pd.size(), "padding", true, 0, &win.ph, &win.pw);
        if (e.empty()) e = read_pair(dl.data(), dl.size(), "dilation", true, 1, &win.dh, &win.dw);
        if (e.empty() && p->mode() == fb::PoolMode::Avg && (win.dh != 1 || win.dw != 1)) e = "avg pool has no dilation";
        if (e.empty()) e = infer_pool2d(sz(x), win, p->ceil_mode(), &out);
      }
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& xs = sz(x);
      // Global average pooling of large planes (squeeze-and-excitation over 112x112): a
      // workgroup per plane sums it cooperatively; one invocation per plane took 350 us on an H200.
      const bool plane_reduce = p->mode() == fb::PoolMode::AdaptiveAvg && out[2] == 1 && out[3] == 1 &&
                                tuning_choice("EMBER_VULKAN_POOL_PLANE_REDUCE", xs[2] * xs[3] >= 256);
      add(ShaderId::Pool2d,
          {ibits(xs[0] * xs[1]), ibits(xs[2]), ibits(xs[3]), ibits(out[2]), ibits(out[3]), ibits(win.kh),
           ibits(win.kw), ibits(win.sh), ibits(win.sw), ibits(win.ph), ibits(win.pw), ibits(win.dh),
           ibits(win.dw), ibits(mode), ibits(p->count_include_pad()), ibits(p->divisor_override()), ibits(plane_reduce)},
          {x, out_}, plane_reduce ? xs[0] * xs[1] * int64_t{kWorkgroupSize} : numel(out));
      return Error::Ok;
    }
    case fb::Params::SoftmaxParams: {
      const fb::SoftmaxParams* p = node_->params_as_SoftmaxParams();
      EMBER_TRY(need_shader(fb::Shader::Softmax));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_f32({x, out_}));
      const Sizes& xs = sz(x);
      int64_t dim;
      if (xs.empty()) return unsupported("softmax of a 0-d tensor");
      if (!normalize_dim(p->dim(), xs.size(), &dim)) return bad("softmax dim %d out of range", p->dim());
      EMBER_TRY(check_out(xs));
      int64_t outer = prod(xs, 0, dim), inner = prod(xs, dim + 1, xs.size());
      const bool coop = xs[dim] >= kWorkgroupSize;  // a workgroup per line (softmax.comp)
      add(ShaderId::Softmax, {ibits(outer), ibits(xs[dim]), ibits(inner), ibits(p->log()), ibits(coop)}, {x, out_},
          outer * inner * (coop ? int64_t{kWorkgroupSize} : 1));
      return Error::Ok;
    }
    case fb::Params::LayerNormParams: {
      const fb::LayerNormParams* p = node_->params_as_LayerNormParams();
      EMBER_TRY(need_shader(fb::Shader::LayerNorm));
      EMBER_TRY(need_inputs(1, 3));
      int x = in(0), w = in(1), b = in(2);
      EMBER_TRY(need_f32({x, w, b, out_}));
      if (p->rms() && (w < 0 || b >= 0 || p->normalized_ndim() != 1)) return bad("RMSNorm takes a weight, no bias, 1 dim");
      e = infer_layer_norm(sz(x), p->normalized_ndim(), w >= 0 ? numel(sz(w)) : -1,
                           b >= 0 ? numel(sz(b)) : -1, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      if (plan_.folded_norm[index_]) return Error::Ok;  // its consumers normalise (dispatch_fusion.h)
      const Sizes& xs = sz(x);
      int64_t cols = prod(xs, xs.size() - p->normalized_ndim(), xs.size());
      int64_t rows = numel(xs) / cols;
      const bool coop = cols >= kWorkgroupSize;  // a workgroup per row (layer_norm.comp)
      // Long rows (an LLM's hidden size) get 256 invocations: a decode step normalises one row,
      // and 64 invocations walking 2048 values measured ~18 us on an H200.
      const uint32_t wg = coop && cols >= 1024 ? wide_workgroup() : kWorkgroupSize;
      add(ShaderId::LayerNorm,
          {ibits(rows), ibits(cols), ibits(w >= 0), ibits(b >= 0), fbits(p->eps()), ibits(coop), ibits(p->rms())},
          {x, w >= 0 ? w : x, b >= 0 ? b : x, out_}, rows * (coop ? int64_t{wg} : 1), {}, wg);
      return Error::Ok;
    }
    case fb::Params::MeanParams: {
      const fb::MeanParams* p = node_->params_as_MeanParams();
      EMBER_TRY(need_shader(fb::Shader::ReduceMean));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_f32({x, out_}));
      std::vector<int64_t> dims;
      for (int32_t d : ints(p->dims())) dims.push_back(d);
      e = infer_mean(sz(x), &dims, p->keepdim(), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& xs = sz(x);
      int64_t outer = prod(xs, 0, dims.front()), r = prod(xs, dims.front(), dims.back() + 1),
              inner = prod(xs, dims.back() + 1, xs.size());
      add(ShaderId::ReduceMean, {ibits(outer), ibits(r), ibits(inner)}, {x, out_}, outer * inner);
      return Error::Ok;
    }
    case fb::Params::PermuteParams: {
      const fb::PermuteParams* p = node_->params_as_PermuteParams();
      EMBER_TRY(need_shader(fb::Shader::StridedCopy));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_copyable(x));
      std::vector<int64_t> perm;
      for (int32_t d : ints(p->perm())) perm.push_back(d);
      e = infer_permute(sz(x), perm, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      for (size_t i = 0; i < out.size(); ++i) normalize_dim(perm[i], out.size(), &perm[i]);
      // Folded (dispatch_fusion.h): its readers or its producer index through it; shapes checked above.
      if (plan_.folded_permute[index_]) return Error::Ok;
      StridedView v = view_of(x);  // x itself unless x is a lazy layout's output
      v.strides = permuted_strides(v.strides, perm);
      if (plan_.lazy_layout[index_] && set_view(v)) return Error::Ok;
      // The same bytes in the same order: an alias, no dispatch. Decided at the bound (a dim
      // that is 1 only at some dynamic sizes must not change the graph's dispatches).
      if (v.tensor == x && moves_only_unit_dims(t_[x].bound, perm)) {
        t_[out_].root = t_[x].root;
        return Error::Ok;
      }
      add_copy(v.tensor, out_, out, v.strides, contiguous(out), v.offset, 0);
      return Error::Ok;
    }
    case fb::Params::ExpandParams: {
      const fb::ExpandParams* p = node_->params_as_ExpandParams();
      EMBER_TRY(need_shader(fb::Shader::StridedCopy));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_copyable(x));
      if (p->sizes() == nullptr) return bad("expand without sizes");
      Sizes target(p->sizes()->begin(), p->sizes()->end());
      e = infer_expand(sz(x), target, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      // Source strides right-aligned with the output; repeated (broadcast) dims read stride 0.
      const Sizes& xs = sz(x);
      std::vector<int64_t> in_st = contiguous(xs), ss(out.size(), 0);
      const size_t lead = out.size() - xs.size();
      for (size_t i = lead; i < out.size(); ++i) ss[i] = xs[i - lead] == out[i] ? in_st[i - lead] : 0;
      add_copy(x, out_, out, ss, contiguous(out), 0, 0);
      return Error::Ok;
    }
    case fb::Params::ViewParams: {
      EMBER_TRY(need_shader(fb::Shader::None));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      if (t_[x].dtype != t_[out_].dtype) return bad("changes the dtype");
      if (numel(sz(x)) != numel(sz(out_))) return bad("changes the element count");
      if (plan_.lazy_layout[index_]) {  // read through strides by an attention (dispatch_fusion.h)
        StridedView v = view_of(x);
        std::vector<int64_t> st;
        if (reshaped_strides(sz(x), v.strides, sz(out_), &st)) {
          const StridedView lazy{v.tensor, v.offset, st};
          if (set_view(lazy)) return Error::Ok;
        }
        if (v.tensor != x) {  // not expressible as strides of x's source: x's elements, copied in order
          add_copy(v.tensor, out_, sz(x), v.strides, contiguous(sz(x)), v.offset, 0);
          return Error::Ok;
        }
      }
      t_[out_].root = t_[x].root;  // an alias: same buffer, no dispatch
      return Error::Ok;
    }
    case fb::Params::CatParams: {
      const fb::CatParams* p = node_->params_as_CatParams();
      EMBER_TRY(need_shader(fb::Shader::StridedCopy));
      if (num_in() < 1) return bad("needs at least one input");
      std::vector<Sizes> xs;
      for (size_t i = 0; i < num_in(); ++i) {
        if (in(i) < 0) return bad("input %zu is missing", i);
        EMBER_TRY(need_copyable(in(i)));
        xs.push_back(sz(in(i)));
      }
      e = infer_cat(xs, p->dim(), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      int64_t dim;
      normalize_dim(p->dim(), out.size(), &dim);
      std::vector<int64_t> ost = contiguous(out);
      int64_t offset = 0;
      for (size_t i = 0; i < num_in(); ++i) {
        if (numel(xs[i]) > 0) add_copy(in(i), out_, xs[i], contiguous(xs[i]), ost, 0, offset * ost[dim]);
        offset += xs[i][dim];
      }
      return Error::Ok;
    }
    case fb::Params::SliceParams: {
      const fb::SliceParams* p = node_->params_as_SliceParams();
      EMBER_TRY(need_shader(fb::Shader::StridedCopy));
      EMBER_TRY(need_inputs(1, 1));
      int x = in(0);
      EMBER_TRY(need_copyable(x));
      int64_t start = p->start(), end = p->end();
      e = infer_slice(sz(x), p->dim(), &start, &end, p->step(), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      int64_t dim;
      normalize_dim(p->dim(), out.size(), &dim);
      StridedView v = view_of(x);  // x itself unless x is a lazy layout's output
      v.offset += start * v.strides[static_cast<size_t>(dim)];
      v.strides[static_cast<size_t>(dim)] *= p->step();
      if (plan_.lazy_layout[index_] && set_view(v)) return Error::Ok;
      add_copy(v.tensor, out_, out, v.strides, contiguous(out), v.offset, 0);
      return Error::Ok;
    }
    case fb::Params::EmbeddingParams: {
      EMBER_TRY(need_shader(fb::Shader::Embedding));
      if (node_->params_as_EmbeddingParams()->weight_bits() != 0) return embedding_weight_only(node_->params_as_EmbeddingParams());
      EMBER_TRY(need_inputs(2, 2));
      int w = in(0), idx = in(1);
      EMBER_TRY(need_f32({w, out_}));
      if (!is_index(idx)) return unsupported("embedding indices must be int32 or int64");
      e = infer_embedding(sz(w), sz(idx), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      add(ShaderId::Embedding,
          {ibits(numel(sz(idx))), ibits(sz(w)[1]), ibits(sz(w)[0]), ibits(is_int64(idx))},
          {w, idx, out_}, numel(out));
      return Error::Ok;
    }
    case fb::Params::RopeParams: {
      EMBER_TRY(need_shader(fb::Shader::Rope));
      EMBER_TRY(need_inputs(3, 3));
      int x = in(0), c = in(1), s = in(2);
      EMBER_TRY(need_f32({x, c, s, out_}));
      e = infer_rope(sz(x), sz(c), sz(s), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& xs = sz(x);
      const int64_t t = xs[xs.size() - 2], d = xs.back(), tc = sz(c)[sz(c).size() - 2];
      if (plan_.folded_rope[index_]) return Error::Ok;  // the attention computes it (dispatch_fusion.h)
      const TokenMajor tm = token_major(x);
      add(ShaderId::Rope, {ibits(numel(out)), ibits(t), ibits(d), ibits(tc), ibits(tm.heads)}, {tm.tensor, c, s, out_}, numel(out));
      return Error::Ok;
    }
    case fb::Params::AttentionParams: {
      const fb::AttentionParams* p = node_->params_as_AttentionParams();
      EMBER_TRY(need_shader(fb::Shader::Attention));
      EMBER_TRY(need_inputs(6, 6));
      int q = in(0), k = in(1), v = in(2), kc = in(3), vc = in(4), pos = in(5);
      EMBER_TRY(need_f32({q, k, v, kc, vc, out_}));
      if (!is_kind(kc, fb::TensorKind::State) || !is_kind(vc, fb::TensorKind::State) || kc == vc)
        return bad("caches must be two state tensors");
      if (!is_kind(pos, fb::TensorKind::Input) || !is_index(pos))
        return bad("positions must be an int32/int64 delegate input (checked before each run)");
      if (!(p->scale() > 0.0f) || !std::isfinite(p->scale())) return bad("scale must be finite and positive");
      e = infer_attention(sz(q), sz(k), sz(v), sz(kc), sz(vc), sz(pos), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& qs = sz(q);
      const int64_t rows = qs[0] * qs[1] * qs[2], t = qs[2], d = qs[3], hkv = sz(k)[1], s = sz(kc)[2];
      // A wide workgroup per query row (attention.comp spreads a row's work over it), narrower
      // where its workgroup memory would not fit: scores[S] + the query row + the reduction
      // scratch (one float per invocation).
      uint32_t wg = attention_workgroup();
      const auto shared_bytes = [&](uint32_t invocations) { return static_cast<uint64_t>(s + d + invocations) * sizeof(float); };
      while (wg > kWorkgroupSize && shared_bytes(wg) > limits_.max_shared_bytes) wg /= 2;
      const uint64_t shared = shared_bytes(wg);
      if (shared > limits_.max_shared_bytes)
        return unsupported("a %lld-row cache needs %llu bytes of shared memory; the device has %u",
                           static_cast<long long>(s), static_cast<unsigned long long>(shared), limits_.max_shared_bytes);
      const uint32_t idx64 = ibits(is_int64(pos));
      // One dispatch: the cache update runs inside (attention.comp). A folded transpose after it
      // (dispatch_fusion.h): write its output, token-major.
      const int y = plan_.transposed_output[index_];
      const RopeIn qr = rope_input(q, plan_.q_rope[index_]), kr = rope_input(k, plan_.k_rope[index_]);
      const TokenMajor vr = token_major(v);
      add(ShaderId::Attention,
          {ibits(rows), ibits(qs[1]), ibits(hkv), ibits(t), ibits(s), ibits(d), idx64, fbits(p->scale()),
           ibits(qr.x.heads > 0), ibits(y >= 0), ibits(qr.cos >= 0), ibits(qr.rows), ibits(kr.x.heads > 0),
           ibits(vr.heads > 0), ibits(kr.cos >= 0), ibits(kr.rows)},
          {qr.x.tensor, kr.x.tensor, vr.tensor, pos, qr.cos >= 0 ? qr.cos : pos, qr.sin >= 0 ? qr.sin : pos,
           kr.cos >= 0 ? kr.cos : pos, kr.sin >= 0 ? kr.sin : pos, kc, vc, y >= 0 ? y : out_},
          rows * int64_t{wg}, {}, wg);
      positions_.push_back({pos, s});
      return Error::Ok;
    }
    case fb::Params::SdpaParams: {
      const fb::SdpaParams* p = node_->params_as_SdpaParams();
      EMBER_TRY(need_shader(fb::Shader::Sdpa));
      EMBER_TRY(need_inputs(3, 4));
      const int q = in(0), k = in(1), v = in(2), mask = in(3);
      EMBER_TRY(need_f32({q, k, v, mask, out_}));
      if (!std::isfinite(p->scale())) return bad("scale must be finite");
      e = infer_sdpa(sz(q), sz(k), sz(v), mask >= 0 ? sz(mask) : Sizes{}, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& qs = sz(q);
      const int64_t s = sz(k)[2], shared = sdpa_shared_floats(s, qs[3]) * int64_t{sizeof(float)};
      if (shared > limits_.max_shared_bytes)
        return unsupported("attention over %lld keys needs %lld bytes of shared memory; the device has %u",
                           static_cast<long long>(s), static_cast<long long>(shared), limits_.max_shared_bytes);
      // Element offset and strides of q, k, v (maybe lazy views, dispatch_fusion.h), the mask
      // (broadcast dims read stride 0) and y (or the folded permute's output, in its order).
      std::vector<int32_t> at;
      const auto put = [&at](const StridedView& sv) {
        at.push_back(static_cast<int32_t>(sv.offset));
        for (int64_t st : sv.strides) at.push_back(static_cast<int32_t>(st));
      };
      const StridedView qv = view_of(q), kv = view_of(k), vv = view_of(v);
      for (const StridedView* sv : {&qv, &kv, &vv}) put(*sv);
      StridedView mv{mask, 0, {0, 0, 0, 0}};
      if (mask >= 0) {
        const Sizes& ms = sz(mask);
        const std::vector<int64_t> mst = contiguous(ms);
        for (size_t i = 0; i < ms.size(); ++i)
          if (ms[i] != 1) mv.strides[4 - ms.size() + i] = mst[i];
      }
      put(mv);
      StridedView yv{out_, 0, contiguous(out)};
      const int pj = plan_.sdpa_permute[index_];
      if (pj >= 0) {  // write the permute's output: logical dim perm[i] is its dim i
        const fb::Node* pn = g_nodes_->Get(static_cast<uint32_t>(pj));
        const fb::PermuteParams* pp = pn->params_as_PermuteParams();
        std::vector<int64_t> perm;
        for (int32_t d : ints(pp->perm())) perm.push_back(d);
        Sizes permuted;
        if (infer_permute(out, perm, &permuted).empty() && pn->outputs() != nullptr && pn->outputs()->size() == 1 &&
            pn->outputs()->Get(0) < t_.size() && numel(sz(static_cast<int>(pn->outputs()->Get(0)))) == numel(out)) {
          const std::vector<int64_t> pst = contiguous(permuted);
          yv.tensor = static_cast<int>(pn->outputs()->Get(0));
          for (size_t i = 0; i < perm.size(); ++i) {
            int64_t d;
            normalize_dim(perm[i], 4, &d);
            yv.strides[static_cast<size_t>(d)] = pst[i];
          }
        } else {
          return bad("its output permute (node %d) does not fit it", pj);
        }
      }
      put(yv);
      std::vector<uint8_t> push(at.size() * sizeof(int32_t));
      std::memcpy(push.data(), at.data(), push.size());
      const int64_t rows = qs[0] * qs[1] * qs[2];
      add(ShaderId::Sdpa,
          {ibits(qs[0]), ibits(qs[1]), ibits(qs[2]), ibits(s), ibits(qs[3]), ibits(out[3]), fbits(p->scale()),
           ibits(mask >= 0)},
          {qv.tensor, kv.tensor, vv.tensor, mask >= 0 ? mask : qv.tensor, yv.tensor}, rows * int64_t{kWorkgroupSize},
          std::move(push), kWorkgroupSize);
      return Error::Ok;
    }
    default:
      return unsupported("unknown op (a newer blob?)");
  }
}

}  // namespace lowering

size_t dtype_size(fb::DType t) {
  switch (t) {
    case fb::DType::Float32: return 4;
    case fb::DType::Float16: return 2;
    case fb::DType::Int32: return 4;
    case fb::DType::Int64: return 8;
    case fb::DType::Int8:
    case fb::DType::UInt8: return 1;
  }
  return 0;
}

void set_tensor_sizes(VulkanGraph::TensorInfo& t, const Sizes& sizes) {
  t.sizes = sizes;
  t.nbytes = static_cast<size_t>(numel(sizes)) * dtype_size(static_cast<fb::DType>(t.dtype));
  t.device_nbytes = t.fp16 ? t.nbytes / 2 : t.nbytes;
}

Error lower_nodes(const fb::Graph& g, const FusionPlan& plan, bool derive, const LoweringLimits& limits,
                  std::vector<VulkanGraph::TensorInfo>& tensors, LoweringResult* out, Diagnostic* diag) {
  lowering::Lowering lowering(tensors, out, derive, limits, g, plan, diag);
  if (g.nodes() != nullptr) {
    for (uint32_t i = 0; i < g.nodes()->size(); ++i) EMBER_TRY(lowering.lower(g.nodes()->Get(i), i));
  }
  lowering.compact();
  lowering::pack_gemm_push(out->dispatches, limits.coop_matrix_f16);
  return Error::Ok;
}

}  // namespace vulkan
}  // namespace ember
