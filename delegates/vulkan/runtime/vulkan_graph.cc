#include "delegates/vulkan/runtime/vulkan_graph.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "delegates/vulkan/runtime/fp16_storage.h"
#include "delegates/vulkan/runtime/vulkan_context.h"
#include "delegates/vulkan/runtime/vulkan_status.h"
#include "delegates/vulkan/vulkan_graph_generated.h"
#include "runtime/platform/platform.h"
#include "runtime/program/program.h"

namespace ember {
namespace vulkan {
namespace {

using TensorInfo = VulkanGraph::TensorInfo;
using Dispatch = VulkanGraph::Dispatch;

constexpr int64_t kMaxElements = int64_t(1) << 31;  // shaders index with 32-bit ints

size_t dtype_size(fb::DType t) {
  switch (t) {
    case fb::DType::Float32: return 4;
    case fb::DType::Float16: return 2;
    case fb::DType::Int32: return 4;
    case fb::DType::Int64: return 8;
  }
  return 0;
}

ScalarType to_scalar_type(uint8_t t) {
  switch (static_cast<fb::DType>(t)) {
    case fb::DType::Float32: return ScalarType::Float32;
    case fb::DType::Float16: return ScalarType::Float16;
    case fb::DType::Int32: return ScalarType::Int32;
    case fb::DType::Int64: return ScalarType::Int64;
  }
  return ScalarType::Float32;
}

uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
uint32_t ibits(int64_t v) { return static_cast<uint32_t>(static_cast<int32_t>(v)); }

// The tiled matmul/conv2d shader paths (TILED spec constant): 32x32 output tiles, one
// 64-invocation workgroup each (the shaders assume kWorkgroupSize == 64).
constexpr int64_t kTile = 32;
constexpr int64_t kMinTiledRows = 16;  // below this many output rows the direct loop wins
static_assert(kWorkgroupSize == 64, "matmul.comp / conv2d.comp tile with 64 invocations");
int64_t tiles(int64_t n) { return (n + kTile - 1) / kTile; }

// "conv2d(1,64,56,56,...)": the shader and its specialisation constants as int32 (float
// constants show as their bit patterns), for the profiler's report.
std::string dispatch_label(const VulkanGraph::Dispatch& d) {
  std::string s = shader_info(d.shader).name;
  s += "(";
  for (size_t i = 0; i < d.spec.size(); ++i) {
    s += (i ? "," : "") + std::to_string(static_cast<int32_t>(d.spec[i]));
  }
  return s + ")";
}

// A shader path choice that the environment may force ("0" / "1", for measuring one path
// against the other on a device); unset, `heuristic` decides. Read at init only.
bool env_choice(const char* name, bool heuristic) {
  const char* env = std::getenv(name);
  if (env != nullptr && (env[0] == '0' || env[0] == '1')) return env[0] == '1';
  return heuristic;
}
// EMBER_VULKAN_TILED: the tiled matmul / implicit-GEMM conv2d paths.
bool use_tiled(bool heuristic) { return env_choice("EMBER_VULKAN_TILED", heuristic); }

std::vector<int64_t> contiguous(const Sizes& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

int64_t prod(const Sizes& s, size_t from, size_t to) {
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

std::vector<int32_t> ints(const flatbuffers::Vector<int32_t>* v) {
  std::vector<int32_t> r;
  if (v != nullptr) r.assign(v->begin(), v->end());
  return r;
}

// Lowers one node; keeps the per-node context for messages.
class Lowering {
 public:
  Lowering(std::vector<TensorInfo>& t, std::vector<Dispatch>& d, Diagnostic* diag)
      : t_(t), d_(d), diag_(diag) {}

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
  Error bad(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail(diag_, Error::InvalidProgram, "vulkan blob: node %zu (%s) %s", index_, op_, msg);
  }
  Error unsupported(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail(diag_, Error::NotSupported, "vulkan: node %zu (%s): %s", index_, op_, msg);
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
    if (expected != sz(out_))
      return bad("output %d has sizes %s, expected %s", out_, sizes_str(sz(out_)).c_str(), sizes_str(expected).c_str());
    return Error::Ok;
  }
  Error need_shader(fb::Shader s) {
    if (node_->shader() != s)
      return bad("uses shader %s, expected %s", fb::EnumNameShader(node_->shader()), fb::EnumNameShader(s));
    return Error::Ok;
  }
  void add(ShaderId s, std::vector<uint32_t> spec, std::vector<int> bindings, int64_t invocations,
           std::vector<uint8_t> push = {}) {
    Dispatch d{s, std::move(spec), std::move(push), std::move(bindings), static_cast<uint64_t>(invocations)};
    d_.push_back(std::move(d));
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

  std::vector<TensorInfo>& t_;
  std::vector<Dispatch>& d_;
  Diagnostic* diag_;
  const fb::Node* node_ = nullptr;
  size_t index_ = 0;
  const char* op_ = "";
  int out_ = -1;
};

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
      const Sizes& xs = sz(x);
      const Sizes& ws = sz(w);
      bool act = p->activation() == fb::Activation::Clamp;
      // The implicit-GEMM tiles (TILED) measured slower than the direct loop on an H100 for
      // every conv of ResNet18/MobileNetV2/SqueezeNet/EfficientNet (docs/benchmarks.md): too few
      // workgroups for deep K. Kept behind EMBER_VULKAN_TILED=1 for devices where it wins.
      const int64_t ocg = out[1] / p->groups(), plane = out[2] * out[3];
      const bool tiled = use_tiled(false) && ocg >= kMinTiledRows && plane >= kMinTiledRows;
      // Split the reduction 8 ways when it is deep and the outputs are too few to fill a GPU.
      const int64_t depth = (xs[1] / p->groups()) * ws[2] * ws[3];
      const bool ksplit = !tiled && env_choice("EMBER_VULKAN_KSPLIT", depth >= 512 && numel(out) < 131072);
      const int64_t invocations = tiled    ? xs[0] * p->groups() * tiles(ocg) * tiles(plane) * int64_t{kWorkgroupSize}
                                  : ksplit ? (numel(out) + 7) / 8 * int64_t{kWorkgroupSize}
                                           : numel(out);
      add(ShaderId::Conv2d,
          {ibits(xs[0]), ibits(xs[1]), ibits(xs[2]), ibits(xs[3]), ibits(out[1]), ibits(out[2]),
           ibits(out[3]), ibits(ws[2]), ibits(ws[3]), ibits(win.sh), ibits(win.sw), ibits(win.ph),
           ibits(win.pw), ibits(win.dh), ibits(win.dw), ibits(p->groups()), ibits(b >= 0), ibits(act),
           fbits(p->act_min()), fbits(p->act_max()), ibits(tiled), ibits(ksplit)},
          {x, w, b >= 0 ? b : w, out_}, invocations);
      return Error::Ok;
    }
    case fb::Params::LinearParams: {
      const fb::LinearParams* p = node_->params_as_LinearParams();
      EMBER_TRY(need_shader(fb::Shader::Matmul));
      EMBER_TRY(need_inputs(2, 3));
      int x = in(0), w = in(1), b = in(2);
      EMBER_TRY(need_f32({x, w, b, out_}));
      e = infer_linear(sz(x), sz(w), b >= 0 ? numel(sz(b)) : -1, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      int64_t k = sz(w)[1], n = sz(w)[0], m = numel(sz(x)) / k;
      bool act = p->activation() == fb::Activation::Clamp;
      const bool tiled = use_tiled(m >= kMinTiledRows);
      add(ShaderId::Matmul,
          {1, ibits(m), ibits(k), ibits(n), 0, 0, 1, ibits(b >= 0), ibits(act), fbits(p->act_min()),
           fbits(p->act_max()), ibits(tiled)},
          {x, w, b >= 0 ? b : w, out_}, tiled ? tiles(m) * tiles(n) * int64_t{kWorkgroupSize} : numel(out));
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
      for (size_t i = 0; i < out.size(); ++i) push.sizes[i] = static_cast<int32_t>(out[i]);
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
      add(ShaderId::Pool2d,
          {ibits(xs[0] * xs[1]), ibits(xs[2]), ibits(xs[3]), ibits(out[2]), ibits(out[3]), ibits(win.kh),
           ibits(win.kw), ibits(win.sh), ibits(win.sw), ibits(win.ph), ibits(win.pw), ibits(win.dh),
           ibits(win.dw), ibits(mode), ibits(p->count_include_pad()), ibits(p->divisor_override())},
          {x, out_}, numel(out));
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
      e = infer_layer_norm(sz(x), p->normalized_ndim(), w >= 0 ? numel(sz(w)) : -1,
                           b >= 0 ? numel(sz(b)) : -1, &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      const Sizes& xs = sz(x);
      int64_t cols = prod(xs, xs.size() - p->normalized_ndim(), xs.size());
      int64_t rows = numel(xs) / cols;
      const bool coop = cols >= kWorkgroupSize;  // a workgroup per row (layer_norm.comp)
      add(ShaderId::LayerNorm,
          {ibits(rows), ibits(cols), ibits(w >= 0), ibits(b >= 0), fbits(p->eps()), ibits(coop)},
          {x, w >= 0 ? w : x, b >= 0 ? b : x, out_}, rows * (coop ? int64_t{kWorkgroupSize} : 1));
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
      std::vector<int64_t> in_st = contiguous(sz(x)), ss(out.size());
      for (size_t i = 0; i < out.size(); ++i) {
        int64_t d;
        normalize_dim(perm[i], out.size(), &d);
        ss[i] = in_st[d];
      }
      add_copy(x, out_, out, ss, contiguous(out), 0, 0);
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
      std::vector<int64_t> ss = contiguous(sz(x));
      int64_t off = start * ss[dim];
      ss[dim] *= p->step();
      add_copy(x, out_, out, ss, contiguous(out), off, 0);
      return Error::Ok;
    }
    case fb::Params::EmbeddingParams: {
      EMBER_TRY(need_shader(fb::Shader::Embedding));
      EMBER_TRY(need_inputs(2, 2));
      int w = in(0), idx = in(1);
      EMBER_TRY(need_f32({w, out_}));
      uint8_t it = t_[idx].dtype;
      if (it != static_cast<uint8_t>(fb::DType::Int32) && it != static_cast<uint8_t>(fb::DType::Int64))
        return unsupported("embedding indices must be int32 or int64");
      e = infer_embedding(sz(w), sz(idx), &out);
      if (!e.empty()) return shape_error(e);
      EMBER_TRY(check_out(out));
      add(ShaderId::Embedding,
          {ibits(numel(sz(idx))), ibits(sz(w)[1]), ibits(sz(w)[0]),
           ibits(it == static_cast<uint8_t>(fb::DType::Int64))},
          {w, idx, out_}, numel(out));
      return Error::Ok;
    }
    default:
      return unsupported("unknown op (a newer blob?)");
  }
}

}  // namespace

Result<std::unique_ptr<VulkanGraph>> VulkanGraph::create(VulkanContext* context,
                                                         Span<const uint8_t> blob,
                                                         const BackendInitContext& init,
                                                         Span<const CompileSpecView> specs, Diagnostic* diag) {
  std::unique_ptr<VulkanGraph> g(new VulkanGraph(context));
  // Phase times for EMBER_VULKAN_PROFILE=1 (start-up is what a second load should not pay).
  auto now = [] { return platform_monotonic_ns(); };
  auto ms = [](uint64_t a, uint64_t b) { return static_cast<double>(b - a) / 1e6; };
  const auto t0 = now();
  EMBER_TRY(g->parse(blob, init, specs, diag));
  EMBER_TRY(g->allocate(diag));
  const auto t_allocated = now();
  EMBER_TRY(g->upload_constants(diag));
  const auto t_uploaded = now();
  // Every pipeline the graph needs, created together (on several threads) before recording.
  PipelineCache& pipelines = context->pipelines();
  const size_t created_before = pipelines.stats().created;
  std::vector<PipelineKey> keys;
  for (const Dispatch& d : g->dispatches_) keys.push_back(PipelineKey{d.shader, d.spec, kWorkgroupSize});
  EMBER_TRY(pipelines.prepare(keys, diag));
  const auto t_prepared = now();
  const bool traced = init.event_tracer != nullptr;
  if (GpuProfiler::requested() || traced) {
    std::vector<std::string> labels;
    for (const Dispatch& d : g->dispatches_) labels.push_back(dispatch_label(d));
    const VkPhysicalDeviceProperties& props = context->properties();
    EMBER_TRY(g->profiler_.init(context->device(), context->physical_device(), context->queue_family(),
                                props.limits.timestampPeriod, std::move(labels), diag,
                                /*quiet=*/!GpuProfiler::requested()));
  }
  EMBER_TRY(g->record(diag));
  const auto t_recorded = now();
  pipelines.save();
  if (GpuProfiler::requested()) {
    const PipelineCacheStats st = pipelines.stats();
    std::fprintf(stderr,
                 "ember vulkan init: %.2f ms = parse + allocate %.2f, weight upload %.2f, pipelines %.2f (%zu new, "
                 "%zu dispatches), record %.2f, cache save %.2f; pipeline cache file %s: %s%s%s\n",
                 ms(t0, now()), ms(t0, t_allocated), ms(t_allocated, t_uploaded), ms(t_uploaded, t_prepared),
                 st.created - created_before, keys.size(), ms(t_prepared, t_recorded), ms(t_recorded, now()),
                 st.file.empty() ? "(off)" : st.file.c_str(), st.load_status.c_str(),
                 st.save_status.empty() ? "" : ", ", st.save_status.c_str());
  }
  return g;
}

Error VulkanGraph::parse(Span<const uint8_t> blob, const BackendInitContext& init, Span<const CompileSpecView> specs,
                         Diagnostic* diag) {
  // FlatBuffers needs 8-byte alignment for 64-bit fields; an inline blob may be less aligned.
  std::vector<uint8_t> copy;
  const uint8_t* data = blob.data();
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    copy.assign(blob.begin(), blob.end());
    data = copy.data();
  }
  if (blob.size() < 8 || !fb::GraphBufferHasIdentifier(data)) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: missing the EVK1 identifier (%zu bytes)", blob.size());
  }
  flatbuffers::Verifier verifier(data, blob.size());
  if (!fb::VerifyGraphBuffer(verifier)) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: FlatBuffer verification failed");
  }
  const fb::Graph* g = fb::GetGraph(data);
  if (g->version() != 1) {
    return fail(diag, Error::VersionMismatch, "vulkan blob: version %u, this runtime reads version 1", g->version());
  }
  fp16_ = g->options() != nullptr && g->options()->fp16();
  if (fp16_) EMBER_TRY(require_fp16_storage(*context_, diag));
  if (g->tensors() == nullptr) return fail(diag, Error::InvalidProgram, "vulkan blob: no tensor table");
  const uint32_t ni = g->input_args() != 0 ? g->input_args() : g->num_inputs(), no = g->num_outputs();
  if (g->num_inputs() > ni || g->num_inputs() > g->tensors()->size() || no > g->tensors()->size()) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: more inputs/outputs than tensors");
  }
  inputs_.assign(ni, -1);
  outputs_.assign(no, -1);
  tensors_.resize(g->tensors()->size());
  for (uint32_t i = 0; i < g->tensors()->size(); ++i) {
    const fb::Tensor* ft = g->tensors()->Get(i);
    TensorInfo& t = tensors_[i];
    if (ft->id() != i) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has id %u", i, ft->id());
    size_t es = dtype_size(ft->dtype());
    if (es == 0) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has an unknown dtype", i);
    t.dtype = static_cast<uint8_t>(ft->dtype());
    t.kind = static_cast<uint8_t>(ft->kind());
    t.io = ft->io_index();
    t.root = static_cast<int>(i);
    if (ft->sizes() != nullptr) t.sizes.assign(ft->sizes()->begin(), ft->sizes()->end());
    if (t.sizes.size() > static_cast<size_t>(kMaxDims)) {
      return fail(diag, Error::NotSupported, "vulkan: tensor %u has rank %zu; at most %d is supported", i,
                  t.sizes.size(), kMaxDims);
    }
    int64_t n = 1;
    for (int64_t s : t.sizes) {
      if (s < 0 || s >= kMaxElements) return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has a bad size", i);
      if (s == 0) return fail(diag, Error::NotSupported, "vulkan: tensor %u has zero elements", i);
      n *= s;
      if (n >= kMaxElements) {
        return fail(diag, Error::NotSupported, "vulkan: tensor %u has more than 2^31 elements", i);
      }
    }
    t.nbytes = t.device_nbytes = static_cast<size_t>(n) * es;
    switch (ft->kind()) {
      case fb::TensorKind::Internal:
        break;
      case fb::TensorKind::Input:
        if (t.io >= ni || inputs_[t.io] >= 0) return fail(diag, Error::InvalidProgram, "vulkan blob: bad input index %u", t.io);
        inputs_[t.io] = static_cast<int>(i);
        t.available = true;
        break;
      case fb::TensorKind::Output:
        if (t.io >= no || outputs_[t.io] >= 0) return fail(diag, Error::InvalidProgram, "vulkan blob: bad output index %u", t.io);
        outputs_[t.io] = static_cast<int>(i);
        break;
      case fb::TensorKind::Constant: {
        const fb::ConstantData* c = ft->constant();
        if (c == nullptr) return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u has no data", i);
        if (c->segment_index() >= 0) {
          // segment_index is the delegate's constant slot (kConstantSegmentsSpec).
          Result<Span<const uint8_t>> seg = delegate_constant(init, specs, static_cast<uint32_t>(c->segment_index()));
          if (!seg.ok()) {
            return fail(diag, Error::InvalidProgram,
                        "vulkan blob: constant %u refers to constant slot %d, which the program does not provide "
                        "(missing %s compile spec, program or segment)", i, c->segment_index(), kConstantSegmentsSpec);
          }
          if (c->nbytes() != t.nbytes || c->offset() > seg->size() || seg->size() - c->offset() < c->nbytes()) {
            return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u (%zu bytes) does not fit constant slot %d", i, t.nbytes, c->segment_index());
          }
          t.constant = Span<const uint8_t>(seg->data() + c->offset(), t.nbytes);
        } else {
          if (c->inline_data() == nullptr || c->inline_data()->size() != t.nbytes) {
            return fail(diag, Error::InvalidProgram, "vulkan blob: constant %u has %u inline bytes, expected %zu", i,
                        c->inline_data() ? c->inline_data()->size() : 0u, t.nbytes);
          }
          // Points into the blob, which lives as long as the program (a copy only while parsing).
          if (!copy.empty()) {
            t.constant = Span<const uint8_t>(blob.data() + (c->inline_data()->data() - data), t.nbytes);
          } else {
            t.constant = Span<const uint8_t>(c->inline_data()->data(), t.nbytes);
          }
        }
        t.available = true;
        break;
      }
      default:
        return fail(diag, Error::InvalidProgram, "vulkan blob: tensor %u has an unknown kind", i);
    }
  }
  uint32_t claimed = 0;
  for (uint32_t k = 0; k < ni; ++k) claimed += inputs_[k] >= 0 ? 1 : 0;
  if (claimed != g->num_inputs()) {
    return fail(diag, Error::InvalidProgram, "vulkan blob: %u input tensors, num_inputs says %u", claimed, g->num_inputs());
  }
  for (uint32_t k = 0; k < no; ++k)
    if (outputs_[k] < 0) return fail(diag, Error::InvalidProgram, "vulkan blob: output %u has no tensor", k);

  if (fp16_) EMBER_TRY(prepare_fp16_tensors(tensors_, diag));
  Lowering lowering(tensors_, dispatches_, diag);
  if (g->nodes() != nullptr) {
    for (uint32_t i = 0; i < g->nodes()->size(); ++i) EMBER_TRY(lowering.lower(g->nodes()->Get(i), i));
  }
  if (fp16_) use_fp16_shaders(tensors_, dispatches_);
  for (uint32_t k = 0; k < no; ++k) {
    if (!tensors_[outputs_[k]].available) {
      return fail(diag, Error::InvalidProgram, "vulkan blob: output %u (tensor %d) is never produced", k, outputs_[k]);
    }
  }
  const VkPhysicalDeviceLimits& lim = context_->properties().limits;
  for (const Dispatch& d : dispatches_) {
    uint64_t groups = (d.invocations + kWorkgroupSize - 1) / kWorkgroupSize;
    uint64_t x = groups < lim.maxComputeWorkGroupCount[0] ? groups : lim.maxComputeWorkGroupCount[0];
    if (x > 0 && (groups + x - 1) / x > lim.maxComputeWorkGroupCount[1]) {
      return fail(diag, Error::NotSupported, "vulkan: a %s dispatch is too large for this device",
                  shader_info(d.shader).name);
    }
  }
  return Error::Ok;
}

Error VulkanGraph::allocate(Diagnostic* diag) {
  std::vector<VkDeviceSize> sizes;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].root == static_cast<int>(i)) {
      tensors_[i].buffer = static_cast<int>(sizes.size());
      sizes.push_back(tensors_[i].device_nbytes);
    }
  }
  EMBER_TRY(device_.create(context_, sizes, MemoryClass::Device, diag));
  if (!device_.host_visible()) {
    std::vector<VkDeviceSize> io;
    for (int t : inputs_) io.push_back(t >= 0 ? tensors_[t].device_nbytes : 0);
    for (int t : outputs_) io.push_back(tensors_[t].device_nbytes);
    EMBER_TRY(staging_.create(context_, io, MemoryClass::Staging, diag));
  }
  VkDevice dev = context_->device();
  VkCommandPoolCreateInfo cp{};
  cp.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  cp.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cp.queueFamilyIndex = context_->queue_family();
  EMBER_VK_TRY(diag, vkCreateCommandPool(dev, &cp, nullptr, &command_pool_), "creating a command pool");
  VkCommandBufferAllocateInfo ca{};
  ca.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ca.commandPool = command_pool_;
  ca.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ca.commandBufferCount = 1;
  EMBER_VK_TRY(diag, vkAllocateCommandBuffers(dev, &ca, &command_buffer_), "allocating a command buffer");
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  EMBER_VK_TRY(diag, vkCreateFence(dev, &fi, nullptr, &fence_), "creating a fence");
  return Error::Ok;
}

Error VulkanGraph::upload_constants(Diagnostic* diag) {
  std::vector<int> consts;
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (tensors_[i].kind == static_cast<uint8_t>(fb::TensorKind::Constant)) consts.push_back(static_cast<int>(i));
  if (consts.empty()) return Error::Ok;
  if (device_.host_visible()) {
    for (int c : consts) write_device_bytes(tensors_[c], tensors_[c].constant.data(), device_buffer(c).mapped);
    return Error::Ok;
  }
  BufferSet staging;
  std::vector<VkDeviceSize> sizes;
  for (int c : consts) sizes.push_back(tensors_[c].device_nbytes);
  EMBER_TRY(staging.create(context_, sizes, MemoryClass::Staging, diag));
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  EMBER_VK_TRY(diag, vkBeginCommandBuffer(command_buffer_, &bi), "recording the weight upload");
  for (size_t i = 0; i < consts.size(); ++i) {
    const TensorInfo& t = tensors_[consts[i]];
    write_device_bytes(t, t.constant.data(), staging[i].mapped);
    VkBufferCopy region{0, 0, t.device_nbytes};
    vkCmdCopyBuffer(command_buffer_, staging[i].buffer, device_buffer(consts[i]).buffer, 1, &region);
  }
  EMBER_VK_TRY(diag, vkEndCommandBuffer(command_buffer_), "recording the weight upload");
  EMBER_TRY(context_->submit_and_wait(command_buffer_, fence_, diag));
  EMBER_TRY(profiler_.collect(diag));
  EMBER_VK_TRY(diag, vkResetCommandBuffer(command_buffer_, 0), "resetting a command buffer");
  return Error::Ok;
}

namespace {
void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
             VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = src_access;
  b.dstAccessMask = dst_access;
  vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
}
}  // namespace

Error VulkanGraph::record(Diagnostic* diag) {
  VkDevice dev = context_->device();
  PipelineCache& cache = context_->pipelines();
  // Descriptor sets.
  if (!dispatches_.empty()) {
    uint32_t num_buffers = 0;
    for (const Dispatch& d : dispatches_) num_buffers += static_cast<uint32_t>(d.bindings.size());
    VkDescriptorPoolSize ps{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, num_buffers};
    VkDescriptorPoolCreateInfo pi{};
    pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pi.maxSets = static_cast<uint32_t>(dispatches_.size());
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    EMBER_VK_TRY(diag, vkCreateDescriptorPool(dev, &pi, nullptr, &descriptor_pool_), "creating a descriptor pool");
  }
  for (Dispatch& d : dispatches_) {
    EMBER_ASSIGN_OR_RETURN(ShaderObjects so, cache.shader(d.shader, diag));
    EMBER_ASSIGN_OR_RETURN(d.pipeline, cache.pipeline(d.shader, d.spec, kWorkgroupSize, diag));
    VkDescriptorSetAllocateInfo ai{};
    ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    ai.descriptorPool = descriptor_pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &so.set_layout;
    EMBER_VK_TRY(diag, vkAllocateDescriptorSets(dev, &ai, &d.set), "allocating a descriptor set");
    VkDescriptorBufferInfo infos[8];
    VkWriteDescriptorSet writes[8];
    for (size_t i = 0; i < d.bindings.size(); ++i) {
      infos[i] = VkDescriptorBufferInfo{device_buffer(d.bindings[i]).buffer, 0, VK_WHOLE_SIZE};
      writes[i] = VkWriteDescriptorSet{};
      writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[i].dstSet = d.set;
      writes[i].dstBinding = static_cast<uint32_t>(i);
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    vkUpdateDescriptorSets(dev, static_cast<uint32_t>(d.bindings.size()), writes, 0, nullptr);
  }

  // The whole graph, recorded once.
  VkCommandBuffer cb = command_buffer_;
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  EMBER_VK_TRY(diag, vkBeginCommandBuffer(cb, &bi), "recording the graph");
  const bool staged = !device_.host_visible();
  if (staged && !inputs_.empty()) {
    for (size_t k = 0; k < inputs_.size(); ++k) {
      if (inputs_[k] < 0) continue;
      VkBufferCopy region{0, 0, tensors_[inputs_[k]].device_nbytes};
      vkCmdCopyBuffer(cb, staging_[k].buffer, device_buffer(inputs_[k]).buffer, 1, &region);
    }
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT);
  }
  const VkPhysicalDeviceLimits& lim = context_->properties().limits;
  profiler_.record_start(cb);
  for (size_t di = 0; di < dispatches_.size(); ++di) {
    const Dispatch& d = dispatches_[di];
    const ShaderInfo& info = shader_info(d.shader);
    EMBER_ASSIGN_OR_RETURN(ShaderObjects so, cache.shader(d.shader, diag));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, d.pipeline);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, so.layout, 0, 1, &d.set, 0, nullptr);
    if (info.push_constant_bytes > 0) {
      uint8_t push[128] = {0};
      std::memcpy(push, d.push.data(), d.push.size() < sizeof(push) ? d.push.size() : sizeof(push));
      vkCmdPushConstants(cb, so.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, info.push_constant_bytes, push);
    }
    uint64_t groups = (d.invocations + kWorkgroupSize - 1) / kWorkgroupSize;
    uint64_t x = groups < lim.maxComputeWorkGroupCount[0] ? groups : lim.maxComputeWorkGroupCount[0];
    uint64_t y = x == 0 ? 0 : (groups + x - 1) / x;
    if (x > 0) vkCmdDispatch(cb, static_cast<uint32_t>(x), static_cast<uint32_t>(y), 1);
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    profiler_.record_after(cb, di);
  }
  if (staged) {
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT);
    for (size_t k = 0; k < outputs_.size(); ++k) {
      VkBufferCopy region{0, 0, tensors_[outputs_[k]].device_nbytes};
      vkCmdCopyBuffer(cb, device_buffer(outputs_[k]).buffer, staging_[inputs_.size() + k].buffer, 1, &region);
    }
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  } else {
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
  }
  EMBER_VK_TRY(diag, vkEndCommandBuffer(cb), "recording the graph");
  return Error::Ok;
}

// GPU times are durations on the GPU's clock: laid back to back from the submission on the
// CPU's monotonic clock and clamped to the end of the wait (estimated starts).
void VulkanGraph::report_dispatches(const BackendExecuteContext& trace, uint64_t submit_ns, uint64_t done_ns) const {
  double t = static_cast<double>(submit_ns);
  for (size_t i = 0; i < profiler_.num_dispatches(); ++i) {
    TraceEvent e;
    e.kind = TraceEventKind::DelegateOp;
    e.estimated_start = true;
    e.run = trace.run;
    e.instruction = trace.instruction;
    e.delegate_op = static_cast<uint32_t>(i);
    e.delegate_index = trace.delegate_index;
    e.name = profiler_.label(i);
    e.debug_name = trace.debug_name;
    e.start_ns = std::min(static_cast<uint64_t>(t), done_ns);
    t += profiler_.last_ns(i);
    e.end_ns = std::min(static_cast<uint64_t>(t), done_ns);
    trace.event_tracer->record(e);
  }
}

Error VulkanGraph::execute(EValue** args, size_t num_args, Diagnostic* diag, const BackendExecuteContext* trace) {
  const size_t ni = inputs_.size(), no = outputs_.size();
  if (num_args != ni + no) {
    return fail(diag, Error::InvalidArgument, "vulkan: delegate expects %zu inputs + %zu outputs, got %zu args", ni, no, num_args);
  }
  for (size_t k = 0; k < ni + no; ++k) {
    if (k < ni && inputs_[k] < 0) continue;  // an ignored argument
    const TensorInfo& t = tensors_[k < ni ? inputs_[k] : outputs_[k - ni]];
    if (args[k] == nullptr || !args[k]->is_tensor() || args[k]->as_tensor == nullptr) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu is not a tensor", k);
    }
    Tensor& a = *args[k]->as_tensor;
    if (a.dtype != to_scalar_type(t.dtype)) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu is %s, expected %s", k,
                  scalar_type_name(a.dtype), scalar_type_name(to_scalar_type(t.dtype)));
    }
    if (k >= ni) {
      Error e = resize_tensor(a, Span<const int64_t>(t.sizes.data(), t.sizes.size()));
      if (e != Error::Ok) return fail(diag, e, "vulkan: output %zu cannot hold the delegate's output shape", k - ni);
    } else {
      bool same = a.rank == t.sizes.size();
      for (size_t d = 0; same && d < t.sizes.size(); ++d) same = a.sizes[d] == t.sizes[d];
      if (!same) return fail(diag, Error::InvalidArgument, "vulkan: input %zu has a different shape than exported", k);
    }
    if (a.data == nullptr || a.nbytes() != t.nbytes) {
      return fail(diag, Error::InvalidArgument, "vulkan: delegate argument %zu has no data", k);
    }
  }
  const bool staged = !device_.host_visible();
  for (size_t k = 0; k < ni; ++k) {
    if (inputs_[k] < 0) continue;
    void* dst = staged ? staging_[k].mapped : device_buffer(inputs_[k]).mapped;
    write_device_bytes(tensors_[inputs_[k]], args[k]->as_tensor->data, dst);
  }
  const bool report = trace != nullptr && trace->event_tracer != nullptr && profiler_.enabled();
  const uint64_t submit_ns = report ? platform_monotonic_ns() : 0;
  EMBER_TRY(context_->submit_and_wait(command_buffer_, fence_, diag));
  EMBER_TRY(profiler_.collect(diag));
  if (report) report_dispatches(*trace, submit_ns, platform_monotonic_ns());
  for (size_t k = 0; k < no; ++k) {
    const void* src = staged ? staging_[ni + k].mapped : device_buffer(outputs_[k]).mapped;
    read_device_bytes(tensors_[outputs_[k]], src, args[ni + k]->as_tensor->data);
  }
  return Error::Ok;
}

VulkanGraph::~VulkanGraph() {
  VkDevice dev = context_->device();
  if (fence_ != VK_NULL_HANDLE) vkDestroyFence(dev, fence_, nullptr);
  if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev, command_pool_, nullptr);
  if (descriptor_pool_ != VK_NULL_HANDLE) vkDestroyDescriptorPool(dev, descriptor_pool_, nullptr);
  staging_.reset();
  device_.reset();
}

}  // namespace vulkan
}  // namespace ember
