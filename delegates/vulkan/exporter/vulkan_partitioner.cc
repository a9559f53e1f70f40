#include "delegates/vulkan/exporter/vulkan_partitioner.h"

#include <cmath>
#include <cstring>
#include <map>

#include "delegates/vulkan/vulkan_blob_builder.h"
#include "delegates/vulkan/vulkan_fp16.h"

namespace ember {
namespace vulkan {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;

bool static_int(const Arg& a, int64_t* v) {
  if (a.kind == Arg::Kind::Int) { *v = a.i; return true; }
  return false;
}
bool static_ints(const Arg& a, std::vector<int64_t>* v) {
  if (a.kind == Arg::Kind::Ints) { *v = a.ints; return true; }
  if (a.kind == Arg::Kind::SymInts) {
    for (int r : a.refs) if (r >= 0) return false;
    *v = a.ints;
    return true;
  }
  return false;
}
bool number(const Arg& a, double* v) {
  if (a.kind == Arg::Kind::Double) { *v = a.d; return true; }
  if (a.kind == Arg::Kind::Int) { *v = static_cast<double>(a.i); return true; }
  return false;
}
std::vector<int32_t> i32(const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); }

VkDType vk_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Int64: return VkDType::Int64;
    case ScalarType::Int32: return VkDType::Int32;
    default: return VkDType::Float32;
  }
}

// scaled_dot_product_attention as softmax(q @ k^T * scale + mask) @ v: two matmuls, an
// affine scale, an optional additive float mask (or the causal one, as a blob constant)
// and a softmax. Boolean masks stay on the portable kernel (check_value rejects them).
std::string lower_attention(const Node& n, const Value& out, VulkanBlobBuilder& b, int q, int k, int v, int mask,
                            std::map<int, int>& ids) {
  auto has = [&](size_t i) { return i < n.args.size(); };
  double d = 0;
  if (q < 0 || k < 0 || v < 0 || mask == -2) return "unmapped input";
  if (has(4) && (!number(n.args[4], &d) || d != 0.0)) return "attention dropout";
  if (has(7) && n.args[7].kind == Arg::Kind::Bool && n.args[7].b) return "enable_gqa";
  const Sizes& qs = b.sizes(q);
  const Sizes& ks = b.sizes(k);
  if (qs.size() < 2 || ks.size() != qs.size() || b.sizes(v).size() != qs.size()) return "attention ranks";
  const size_t rank = qs.size();
  const int64_t l = qs[rank - 2], s = ks[rank - 2], e = qs[rank - 1];
  double scale = 1.0 / std::sqrt(static_cast<double>(e));
  if (has(6) && n.args[6].kind != Arg::Kind::None && !number(n.args[6], &scale)) return "attention scale";
  const bool causal = has(5) && n.args[5].kind == Arg::Kind::Bool && n.args[5].b;
  if (causal && mask >= 0) return "causal attention with a mask";
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  int scores = b.matmul(q, b.permute(k, perm));
  scores = b.unary(VkUnary::Affine, scores, static_cast<float>(scale), 0.0f);
  if (causal) {  // PyTorch's causal mask: query i sees keys j <= i (top-left aligned)
    std::vector<float> m(static_cast<size_t>(l * s), 0.0f);
    for (int64_t i = 0; i < l; ++i)
      for (int64_t j = i + 1; j < s; ++j) m[static_cast<size_t>(i * s + j)] = -INFINITY;
    mask = b.constant({l, s}, m);
  }
  if (mask >= 0) scores = b.binary(VkBinary::Add, scores, mask);
  const int r = b.matmul(b.softmax(scores, static_cast<int32_t>(rank - 1)), v);
  if (r < 0) return b.ok() ? std::string("attention lowering failed") : b.error();
  if (b.sizes(r) != out.sizes) return "shape mismatch " + sizes_str(b.sizes(r)) + " vs " + sizes_str(out.sizes);
  ids[n.outputs[0].ref] = r;
  return "";
}

// Adds `n` to `b`; `ids` maps graph value ids to blob tensor ids (inputs already mapped).
// Returns "" or why the node cannot run on the delegate.
std::string lower(const Graph& g, const Node& n, VulkanBlobBuilder& b, std::map<int, int>& ids) {
  const std::string k = n.kernel_name();
  if (n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) return "not a single-tensor op";
  const Value& out = g.values[n.outputs[0].ref];
  if (out.is_dynamic()) return "dynamic output shape";
  if (out.dtype != ScalarType::Float32) return "output is not float32";
  auto t = [&](size_t i) -> int {  // tensor argument i (-1: None)
    if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Tensor) return -1;
    auto it = ids.find(n.args[i].ref);
    return it == ids.end() ? -2 : it->second;
  };
  auto has = [&](size_t i) { return i < n.args.size(); };
  int r = -1;
  std::vector<int64_t> v1, v2, v3, v4;
  int64_t i1 = 0;
  double d1 = 0, d2 = 0;
  if (k == "aten::convolution.default" || k == "aten::conv2d.default") {
    bool conv = k == "aten::convolution.default";
    if (!has(conv ? 8 : 6) || !static_ints(n.args[3], &v1) || !static_ints(n.args[4], &v2) || !static_ints(n.args[5], &v3))
      return "non-static conv params";
    if (conv && (n.args[6].kind != Arg::Kind::Bool || n.args[6].b)) return "transposed convolution";
    if (!static_int(n.args[conv ? 8 : 6], &i1)) return "non-static groups";
    if (t(0) < 0 || b.sizes(t(0)).size() != 4) return "conv input is not 4-D";
    r = b.conv2d(t(0), t(1), t(2), i32(v1), i32(v2), i32(v3), static_cast<int>(i1));
  } else if (k == "aten::linear.default") {
    r = b.linear(t(0), t(1), t(2));
  } else if (k == "aten::mm.default" || k == "aten::bmm.default" || k == "aten::matmul.default") {
    if (t(0) < 0 || t(1) < 0 || b.sizes(t(0)).size() < 2 || b.sizes(t(1)).size() < 2) return "matmul of vectors";
    const Sizes &as = b.sizes(t(0)), &bs = b.sizes(t(1));
    Sizes ob(out.sizes.begin(), out.sizes.end() - 2);
    for (const Sizes* s : {&as, &bs}) {
      Sizes sb(s->begin(), s->end() - 2);
      while (sb.size() < ob.size()) sb.insert(sb.begin(), 1);
      if (numel(sb) != 1 && sb != ob) return "partially broadcast matmul batch";
    }
    r = b.matmul(t(0), t(1));
  } else if ((k == "aten::add.Tensor" || k == "aten::sub.Tensor" || k == "aten::add.Scalar" ||
              k == "aten::sub.Scalar") && has(1) && number(n.args[1], &d1)) {
    // x + alpha * s: an affine unary op, no tensor for the scalar.
    if (has(2) && !number(n.args[2], &d2)) return "non-numeric alpha";
    const double alpha = has(2) ? d2 : 1.0;
    const double shift = (k == "aten::sub.Tensor" || k == "aten::sub.Scalar" ? -1.0 : 1.0) * alpha * d1;
    r = b.unary(VkUnary::Affine, t(0), 1.0f, static_cast<float>(shift));
  } else if ((k == "aten::mul.Tensor" || k == "aten::div.Tensor" || k == "aten::mul.Scalar" ||
              k == "aten::div.Scalar") && has(1) && number(n.args[1], &d1)) {
    const bool div = k == "aten::div.Tensor" || k == "aten::div.Scalar";
    if (div && d1 == 0.0) return "division by a zero scalar";
    r = b.unary(VkUnary::Affine, t(0), static_cast<float>(div ? 1.0 / d1 : d1), 0.0f);
  } else if (k == "aten::neg.default") {
    r = b.unary(VkUnary::Affine, t(0), -1.0f, 0.0f);
  } else if (k == "aten::rsqrt.default" || k == "aten::sqrt.default" || k == "aten::exp.default") {
    r = b.unary(k == "aten::rsqrt.default" ? VkUnary::Rsqrt : k == "aten::sqrt.default" ? VkUnary::Sqrt : VkUnary::Exp,
                t(0));
  } else if (k == "aten::pow.Tensor_Scalar") {
    if (!has(1) || !number(n.args[1], &d1)) return "non-numeric exponent";
    r = b.unary(VkUnary::Pow, t(0), static_cast<float>(d1), 0.0f);
  } else if (k == "aten::addmm.default") {
    // beta * bias + alpha * (x @ w): a matmul and a broadcast add when both factors are 1.
    if ((has(3) && (!number(n.args[3], &d1) || d1 != 1.0)) || (has(4) && (!number(n.args[4], &d2) || d2 != 1.0)))
      return "addmm beta/alpha other than 1";
    if (t(0) < 0 || t(1) < 0 || t(2) < 0) return "unmapped input";
    const int mm = b.matmul(t(1), t(2));
    r = mm < 0 ? -1 : b.binary(VkBinary::Add, mm, t(0));
  } else if (k == "aten::scaled_dot_product_attention.default") {
    return lower_attention(n, out, b, t(0), t(1), t(2), has(3) ? t(3) : -1, ids);
  } else if (k == "aten::add.Tensor" || k == "aten::sub.Tensor") {
    if (!has(2) || !number(n.args[2], &d1)) return "non-numeric alpha";
    r = b.binary(k == "aten::add.Tensor" ? VkBinary::Add : VkBinary::Sub, t(0), t(1), static_cast<float>(d1));
  } else if (k == "aten::mul.Tensor" || k == "aten::div.Tensor") {
    r = b.binary(k == "aten::mul.Tensor" ? VkBinary::Mul : VkBinary::Div, t(0), t(1));
  } else if (k == "aten::relu.default") {
    r = b.unary(VkUnary::Relu, t(0));
  } else if (k == "aten::relu6.default") {
    r = b.unary(VkUnary::Clamp, t(0), 0.0f, 6.0f);
  } else if (k == "aten::hardtanh.default") {
    if (!has(2) || !number(n.args[1], &d1) || !number(n.args[2], &d2)) return "non-numeric bounds";
    r = b.unary(VkUnary::Hardtanh, t(0), static_cast<float>(d1), static_cast<float>(d2));
  } else if (k == "aten::clamp.default") {
    float lo = -INFINITY, hi = INFINITY;
    if (has(1) && n.args[1].kind != Arg::Kind::None) { if (!number(n.args[1], &d1)) return "clamp min"; lo = static_cast<float>(d1); }
    if (has(2) && n.args[2].kind != Arg::Kind::None) { if (!number(n.args[2], &d2)) return "clamp max"; hi = static_cast<float>(d2); }
    r = b.unary(VkUnary::Clamp, t(0), lo, hi);
  } else if (k == "aten::hardswish.default") {
    r = b.unary(VkUnary::Hardswish, t(0));
  } else if (k == "aten::hardsigmoid.default") {
    r = b.unary(VkUnary::Hardsigmoid, t(0));
  } else if (k == "aten::sigmoid.default") {
    r = b.unary(VkUnary::Sigmoid, t(0));
  } else if (k == "aten::silu.default") {
    r = b.unary(VkUnary::Silu, t(0));
  } else if (k == "aten::tanh.default") {
    r = b.unary(VkUnary::Tanh, t(0));
  } else if (k == "aten::gelu.default") {
    bool tanh_approx = has(1) && n.args[1].kind == Arg::Kind::String && n.args[1].s == "tanh";
    r = b.unary(tanh_approx ? VkUnary::GeluTanh : VkUnary::Gelu, t(0));
  } else if (k == "aten::max_pool2d.default") {
    bool ceil = has(5) && n.args[5].kind == Arg::Kind::Bool && n.args[5].b;
    if (!has(5) || !static_ints(n.args[1], &v1) || !static_ints(n.args[2], &v2) || !static_ints(n.args[3], &v3) ||
        !static_ints(n.args[4], &v4))
      return "non-static pool params";
    r = b.max_pool2d(t(0), i32(v1), i32(v2), i32(v3), i32(v4), ceil);
  } else if (k == "aten::avg_pool2d.default") {
    if (!has(6) || !static_ints(n.args[1], &v1) || !static_ints(n.args[2], &v2) || !static_ints(n.args[3], &v3))
      return "non-static pool params";
    int64_t div = 0;
    if (n.args[6].kind != Arg::Kind::None && !static_int(n.args[6], &div)) return "divisor_override";
    r = b.avg_pool2d(t(0), i32(v1), i32(v2), i32(v3), n.args[4].b, n.args[5].b, static_cast<int32_t>(div));
  } else if (k == "aten::adaptive_avg_pool2d.default" || k == "aten::_adaptive_avg_pool2d.default") {
    if (!has(1) || !static_ints(n.args[1], &v1) || v1.size() != 2) return "output_size";
    r = b.adaptive_avg_pool2d(t(0), v1[0], v1[1]);
  } else if (k == "aten::_softmax.default" || k == "aten::_log_softmax.default" || k == "aten::softmax.int") {
    if (!has(1) || !static_int(n.args[1], &i1)) return "softmax dim";
    if (k != "aten::softmax.int" && has(2) && n.args[2].b) return "half_to_float";
    if (k == "aten::softmax.int" && has(2) && n.args[2].kind != Arg::Kind::None) return "softmax dtype";
    r = b.softmax(t(0), static_cast<int32_t>(i1), k == "aten::_log_softmax.default");
  } else if (k == "aten::layer_norm.default") {
    if (!has(4) || !static_ints(n.args[1], &v1) || !number(n.args[4], &d1)) return "layer_norm params";
    r = b.layer_norm(t(0), t(2), t(3), static_cast<int32_t>(v1.size()), static_cast<float>(d1));
  } else if (k == "aten::mean.dim") {
    if (!has(3) || n.args[3].kind != Arg::Kind::None) return "mean dtype";
    if (n.args[1].kind != Arg::Kind::None && !static_ints(n.args[1], &v1)) return "mean dims";
    r = b.mean(t(0), v1, n.args[2].b);
  } else if (k == "aten::permute.default") {
    if (!has(1) || !static_ints(n.args[1], &v1)) return "permute dims";
    r = b.permute(t(0), v1);
  } else if (k == "aten::transpose.int") {
    const int64_t rank = t(0) < 0 ? 0 : static_cast<int64_t>(b.sizes(t(0)).size());
    int64_t d0 = 0, d1i = 0;
    if (!has(2) || !static_int(n.args[1], &d0) || !static_int(n.args[2], &d1i)) return "transpose dims";
    if (!normalize_dim(d0, rank, &d0) || !normalize_dim(d1i, rank, &d1i)) return "transpose dims out of range";
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
    std::swap(perm[static_cast<size_t>(d0)], perm[static_cast<size_t>(d1i)]);
    r = b.permute(t(0), perm);
  } else if (k == "aten::t.default") {
    if (t(0) < 0 || b.sizes(t(0)).size() != 2) return "t of a non-matrix";
    r = b.permute(t(0), {1, 0});
  } else if (k == "aten::view.default" || k == "aten::_unsafe_view.default" || k == "aten::reshape.default" ||
             k == "aten::squeeze.dim" || k == "aten::squeeze.dims" || k == "aten::squeeze.default" ||
             k == "aten::unsqueeze.default" || k == "aten::unflatten.int" || k == "aten::flatten.using_ints" ||
             k == "aten::clone.default" || k == "aten::alias.default") {
    // Contiguous data keeps its element order: all of these are views of the output shape.
    r = b.view(t(0), out.sizes);
  } else if (k == "aten::expand.default") {
    if (!has(1) || !static_ints(n.args[1], &v1)) return "expand sizes";
    r = b.expand(t(0), v1);
  } else if (k == "aten::repeat_interleave.self_int") {
    // Each slice along `dim` repeated `repeats` times in place (grouped-query attention's
    // key/value heads): view with a size-1 dim after `dim`, expand it, merge the two.
    int64_t repeats = 0, dim = 0;
    if (!has(2) || !static_int(n.args[1], &repeats) || repeats < 1 || n.args[2].kind != Arg::Kind::Int)
      return "repeat_interleave needs an int repeats and a dim";
    if (has(3) && n.args[3].kind != Arg::Kind::None) return "repeat_interleave output_size";
    if (t(0) < 0) return "unmapped input";
    Sizes xs = b.sizes(t(0));
    if (!normalize_dim(n.args[2].i, static_cast<int64_t>(xs.size()), &dim)) return "repeat_interleave dim out of range";
    Sizes split = xs, wide = xs;
    split.insert(split.begin() + dim + 1, 1);
    wide.insert(wide.begin() + dim + 1, repeats);
    const int e = b.expand(b.view(t(0), split), wide);
    r = e < 0 ? -1 : b.view(e, out.sizes);
  } else if (k == "aten::index.Tensor") {
    // x[idx] with one integer index tensor on dim 0 (RoPE tables indexed by position): a row
    // gather, i.e. an embedding lookup over x viewed as [rows, rest].
    if (!has(1) || (n.args[1].kind != Arg::Kind::OptionalTensors && n.args[1].kind != Arg::Kind::Tensors) ||
        n.args[1].refs.size() != 1 || n.args[1].refs[0] < 0)
      return "index with other than one index tensor on dim 0";
    auto it = ids.find(n.args[1].refs[0]);
    if (it == ids.end() || t(0) < 0) return "unmapped input";
    const Sizes& xs = b.sizes(t(0));
    if (xs.empty()) return "index of a 0-d tensor";
    int64_t rest = 1;
    for (size_t i = 1; i < xs.size(); ++i) rest *= xs[i];
    const int rows = b.view(t(0), {xs[0], rest});
    const int g = rows < 0 ? -1 : b.embedding(rows, it->second);
    r = g < 0 ? -1 : b.view(g, out.sizes);
  } else if (k == "aten::select.int") {
    int64_t dim = 0, index = 0;
    if (!has(2) || !static_int(n.args[1], &dim) || !static_int(n.args[2], &index)) return "select params";
    if (t(0) < 0) return "unmapped input";
    const Sizes& xs = b.sizes(t(0));
    if (!normalize_dim(dim, static_cast<int64_t>(xs.size()), &dim)) return "select dim out of range";
    if (index < 0) index += xs[static_cast<size_t>(dim)];
    if (index < 0 || index >= xs[static_cast<size_t>(dim)]) return "select index out of range";
    const int sl = b.slice(t(0), static_cast<int32_t>(dim), index, index + 1, 1);
    r = sl < 0 ? -1 : b.view(sl, out.sizes);
  } else if (k == "aten::cat.default") {
    if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors) return "cat inputs";
    std::vector<int> xs;
    for (int ref : n.args[0].refs) {
      auto it = ids.find(ref);
      if (it == ids.end()) return "cat input not mapped";
      xs.push_back(it->second);
    }
    int64_t dim = 0;
    if (has(1) && !static_int(n.args[1], &dim)) return "cat dim";
    r = b.cat(xs, static_cast<int32_t>(dim));
  } else if (k == "aten::slice.Tensor") {
    int64_t dim = 0, start = 0, end = INT64_MAX, step = 1;
    if (!has(4) || !static_int(n.args[1], &dim) || !static_int(n.args[4], &step)) return "slice params";
    if (n.args[2].kind != Arg::Kind::None && !static_int(n.args[2], &start)) return "slice start";
    if (n.args[3].kind != Arg::Kind::None && !static_int(n.args[3], &end)) return "slice end";
    r = b.slice(t(0), static_cast<int32_t>(dim), start, end, step);
  } else if (k == "aten::embedding.default") {
    r = b.embedding(t(0), t(1));
  } else {
    return "op " + k + " has no Vulkan shader";
  }
  if (r < 0) return b.ok() ? std::string("unmapped input") : b.error();
  if (b.sizes(r) != out.sizes) return "shape mismatch " + sizes_str(b.sizes(r)) + " vs " + sizes_str(out.sizes);
  ids[n.outputs[0].ref] = r;
  return "";
}

// Tensor inputs of a node (value refs that are tensors).
std::vector<int> tensor_inputs(const Graph& g, const Node& n) {
  std::vector<int> r;
  for (const Arg& a : n.args)
    for (int v : a.value_refs())
      if (g.values[v].type == exporter::ValueType::Tensor) r.push_back(v);
  return r;
}

std::string check_value(const Value& v) {
  if (v.type != exporter::ValueType::Tensor) return "symbolic argument";
  if (v.is_dynamic()) return "dynamic shape";
  if (v.dtype != ScalarType::Float32 && v.dtype != ScalarType::Int64 && v.dtype != ScalarType::Int32)
    return "dtype " + exporter::dtype_name(v.dtype);
  if (static_cast<int>(v.sizes.size()) > kMaxDims) return "rank too high";
  for (int64_t s : v.sizes) if (s == 0) return "zero-size tensor";
  return "";
}

}  // namespace

namespace {

// Ops that only move or relabel data: a run of nothing else costs a GPU round trip (upload,
// submit, wait, download) and saves no arithmetic, so it stays on the CPU.
bool moves_data_only(const Node& n) {
  static const char* const kOps[] = {
      "aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default", "aten::squeeze.dim",
      "aten::squeeze.dims", "aten::squeeze.default", "aten::unsqueeze.default", "aten::unflatten.int",
      "aten::flatten.using_ints", "aten::clone.default", "aten::alias.default", "aten::permute.default",
      "aten::transpose.int", "aten::t.default", "aten::select.int", "aten::slice.Tensor", "aten::cat.default",
      "aten::expand.default", "aten::repeat_interleave.self_int", "aten::index.Tensor"};
  const std::string k = n.kernel_name();
  for (const char* op : kOps) if (k == op) return true;
  return false;
}

}  // namespace

std::string VulkanPartitioner::unsupported_reason(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  if (n.erased) return "erased";
  for (const Arg& a : n.args)
    for (int v : a.value_refs())
      if (g.values[v].type != exporter::ValueType::Tensor) return "symbolic argument";
  VulkanBlobBuilder b;
  std::map<int, int> ids;
  // Integer tensors are moved (views, slices, ...) or used as indices (embedding rows,
  // index.Tensor); every shader that computes does so on float32 (RAFT's integer coordinate
  // grid reached a unary op, was claimed, and failed at load).
  const std::string k = n.kernel_name();
  const bool takes_indices = k == "aten::embedding.default" || k == "aten::index.Tensor" || moves_data_only(n);
  for (int v : tensor_inputs(g, n)) {
    if (ids.count(v)) continue;
    std::string e = check_value(g.values[v]);
    if (!e.empty()) return e;
    if (!takes_indices && g.values[v].dtype != ScalarType::Float32) return "an integer tensor input";
    ids[v] = b.input(g.values[v].sizes, vk_dtype(g.values[v].dtype));
  }
  return lower(g, n, b, ids);
}

std::vector<std::vector<int>> VulkanPartitioner::claim(const Graph& g) {
  std::vector<std::vector<int>> sets;
  std::vector<int> run;
  auto flush = [&] {
    bool computes = false;
    for (int i : run) computes |= !moves_data_only(g.nodes[i]);
    if (computes && run.size() >= options_.min_nodes) sets.push_back(run);
    run.clear();
  };
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (g.nodes[i].erased) continue;
    if (unsupported_reason(g, i).empty()) run.push_back(i);
    else flush();
  }
  flush();
  return sets;
}

absl::StatusOr<exporter::DelegateBlob> VulkanPartitioner::preprocess(const Graph& g,
                                                                     const exporter::Partition& p) {
  VulkanBlobBuilder b;
  b.set_fp16(options_.fp16);
  exporter::ConstantSlots slots(g);
  std::map<int, int> ids;
  for (int v : p.inputs) {
    const Value& val = g.values[v];
    if (val.type != exporter::ValueType::Tensor) return absl::InvalidArgumentError("vulkan: symbolic partition input");
    if (val.role == exporter::ValueRole::Constant && val.constant >= 0 && options_.fp16 &&
        val.dtype == ScalarType::Float32) {
      // fp16: a Float16 copy of the weight in its own slot (same layout, half the bytes).
      const exporter::Constant& c = g.constants[val.constant];
      const size_t n = c.data.size() / sizeof(float);
      if (static_cast<int64_t>(n) != numel(val.sizes)) return absl::InternalError("vulkan: constant size mismatch");
      std::vector<float> f32(n);
      std::vector<uint8_t> f16(n * sizeof(uint16_t));
      if (n > 0) {
        std::memcpy(f32.data(), c.data.data(), n * sizeof(float));
        floats_to_halves(f32.data(), reinterpret_cast<uint16_t*>(f16.data()), n);
      }
      const uint32_t slot = slots.add(val.constant, c.name + ".fp16", ScalarType::Float16, val.sizes, std::move(f16));
      ids[v] = b.constant_in_slot(val.sizes, VkDType::Float16, static_cast<int32_t>(slot));
    } else if (val.role == exporter::ValueRole::Constant && val.constant >= 0) {
      // Weights stay in the program's segments (PyTorch layouts are the shaders' layouts).
      ids[v] = b.constant_in_slot(val.sizes, vk_dtype(val.dtype), static_cast<int32_t>(slots.existing(val.constant)));
    } else {
      ids[v] = b.input(val.sizes, vk_dtype(val.dtype));
    }
  }
  for (int i : p.nodes) {
    std::string e = lower(g, g.nodes[i], b, ids);
    if (!e.empty()) return absl::InvalidArgumentError("vulkan: node " + std::to_string(i) + ": " + e);
  }
  for (int v : p.outputs) {
    auto it = ids.find(v);
    if (it == ids.end()) return absl::InternalError("vulkan: partition output not produced");
    b.output(it->second);
  }
  exporter::DelegateBlob blob;
  blob.data = b.build();
  if (blob.data.empty()) return absl::InvalidArgumentError("vulkan: " + b.error());
  slots.finish(&blob);
  const std::string summary = exporter::summarize_partition(g, p);
  blob.compile_specs.push_back({exporter::kSummarySpec, std::vector<uint8_t>(summary.begin(), summary.end())});
  if (options_.allow_cpu) blob.compile_specs.push_back({"allow_cpu", {1}});
  return blob;
}

}  // namespace vulkan
}  // namespace ember
