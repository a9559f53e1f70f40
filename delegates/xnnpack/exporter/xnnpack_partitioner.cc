#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "delegates/xnnpack/exporter/graph_access.h"
#include "delegates/xnnpack/exporter/xnnpack_quantized.h"
#include "delegates/xnnpack/exporter/xnnpack_weight_only.h"
#include "delegates/xnnpack/xnnpack_blob_builder.h"

namespace ember {
namespace xnnpack {
namespace {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;
using exporter::ValueType;


bool f32_tensor(const Value& v) { return v.type == ValueType::Tensor && v.dtype == ScalarType::Float32; }
bool f32_static(const Value& v) { return f32_tensor(v) && !v.is_dynamic(); }
std::vector<int64_t> ints(const Node& n, size_t i, size_t count, int64_t dflt) {
  std::vector<int64_t> v;
  if (i < n.args.size() && (n.args[i].kind == Arg::Kind::Ints || n.args[i].kind == Arg::Kind::SymInts)) v = n.args[i].ints;
  if (i < n.args.size() && n.args[i].kind == Arg::Kind::Int) v = {n.args[i].i};
  if (v.empty()) v.assign(count, dflt);
  if (v.size() == 1) v.assign(count, v[0]);
  return v;
}
bool has_scalar(const Node& n, size_t i) {
  return i < n.args.size() && (n.args[i].kind == Arg::Kind::Int || n.args[i].kind == Arg::Kind::Double);
}
double scalar(const Node& n, size_t i, double dflt) {
  if (!has_scalar(n, i)) return dflt;
  return n.args[i].kind == Arg::Kind::Int ? double(n.args[i].i) : n.args[i].d;
}
bool flag(const Node& n, size_t i) { return i < n.args.size() && n.args[i].kind == Arg::Kind::Bool && n.args[i].b; }
bool trivial4d(const Value& v) { return v.sizes.size() != 4 || v.sizes[1] == 1 || v.sizes[2] * v.sizes[3] == 1; }

std::vector<size_t> xdims(const Value& v) {
  if (v.sizes.size() == 4) return {size_t(v.sizes[0]), size_t(v.sizes[2]), size_t(v.sizes[3]), size_t(v.sizes[1])};
  return std::vector<size_t>(v.sizes.begin(), v.sizes.end());
}

bool is_clamp_like(const std::string& k) {
  return k == "aten::relu.default" || k == "aten::relu6.default" || k == "aten::hardtanh.default" ||
         k == "aten::clamp.default";
}
void clamp_range(const Node& n, float* lo, float* hi) {
  const std::string k = key(n);
  *lo = -std::numeric_limits<float>::infinity();
  *hi = std::numeric_limits<float>::infinity();
  if (k == "aten::relu.default") *lo = 0;
  if (k == "aten::relu6.default") *lo = 0, *hi = 6;
  if (k == "aten::hardtanh.default") *lo = float(scalar(n, 1, -1)), *hi = float(scalar(n, 2, 1));
  if (k == "aten::clamp.default") {
    if (has_scalar(n, 1)) *lo = float(scalar(n, 1, 0));
    if (has_scalar(n, 2)) *hi = float(scalar(n, 2, 0));
  }
}
bool fusable_producer(const std::string& k) {
  return k == "aten::conv2d.default" || k == "aten::convolution.default" || k == "aten::linear.default" ||
         k == "aten::addmm.default" || k == "aten::mm.default" || k == "aten::max_pool2d.default" ||
         k == "aten::avg_pool2d.default" || k == "aten::add.Tensor" || k == "aten::sub.Tensor" ||
         k == "aten::mul.Tensor" || k == "aten::div.Tensor";
}

const std::set<std::string>& reshape_ops() {
  static const std::set<std::string> s = {"aten::view.default",      "aten::reshape.default",
                                          "aten::_unsafe_view.default", "aten::flatten.using_ints",
                                          "aten::unsqueeze.default", "aten::squeeze.dim",
                                          "aten::squeeze.dims",      "aten::squeeze.default",
                                          "aten::unflatten.int"};
  return s;
}

// XNNPACK unary nodes for one-input ATen ops with the same semantics.
const std::map<std::string, fb::OpType>& unary_ops() {
  static const std::map<std::string, fb::OpType> m = {
      {"aten::tanh.default", fb::OpType::Tanh},        {"aten::exp.default", fb::OpType::Exp},
      {"aten::log.default", fb::OpType::Log},          {"aten::rsqrt.default", fb::OpType::ReciprocalSquareRoot},
      {"aten::neg.default", fb::OpType::Negate},       {"aten::sqrt.default", fb::OpType::SquareRoot},
      {"aten::abs.default", fb::OpType::Abs},          {"aten::clone.default", fb::OpType::Copy},
      {"aten::alias.default", fb::OpType::Copy},       {"aten::floor.default", fb::OpType::Floor},
      {"aten::ceil.default", fb::OpType::Ceiling},     {"aten::sin.default", fb::OpType::Sine},
      {"aten::cos.default", fb::OpType::Cosine}};
  return m;
}

bool is_scalar_binary(const std::string& k) {
  return k == "aten::add.Scalar" || k == "aten::sub.Scalar" || k == "aten::mul.Scalar" || k == "aten::div.Scalar";
}

int64_t norm_dim(int64_t d, size_t rank) { return d < 0 ? d + int64_t(rank) : d; }

// Reduction axes of mean.dim / sum.dim_IntList (None or [] = all dims); false when invalid.
bool reduce_axes(const Node& n, size_t rank, std::vector<uint64_t>* axes) {
  axes->clear();
  std::vector<int64_t> d;
  if (n.args.size() > 1 && (n.args[1].kind == Arg::Kind::Ints || n.args[1].kind == Arg::Kind::SymInts)) d = n.args[1].ints;
  if (d.empty()) {
    for (size_t i = 0; i < rank; ++i) d.push_back(int64_t(i));
  }
  std::set<int64_t> seen;
  for (int64_t v : d) {
    v = norm_dim(v, rank);
    if (v < 0 || v >= int64_t(rank) || !seen.insert(v).second) return false;
    axes->push_back(uint64_t(v));
  }
  return !axes->empty();
}

// Ops whose XNNPACK nodes follow a bounded input-shape change (xnn_reshape_runtime re-derives
// their shapes): they take dynamic (bounded) tensors as long as the dims they index or
// weights fix (the last dim of linear/layer_norm/softmax) are static.
bool shape_polymorphic(const Graph& g, const Node& n) {
  const std::string k = key(n);
  const Value* x = tensor_arg(g, n, 0);
  const bool last_static = x && !x->dynamic_dims.empty() && !x->dynamic_dims.back();
  if (k == "aten::linear.default" || k == "aten::layer_norm.default" || k == "aten::_softmax.default" ||
      k == "aten::softmax.int") {
    return last_static;
  }
  return is_clamp_like(k) || k == "aten::sigmoid.default" || k == "aten::hardswish.default" ||
         k == "aten::silu.default" || k == "aten::gelu.default" || unary_ops().count(k) || is_scalar_binary(k) ||
         k == "aten::add.Tensor" || k == "aten::sub.Tensor" || k == "aten::mul.Tensor" || k == "aten::div.Tensor";
}

// Which layout a node needs inside a partition. 4D activations are NHWC in a partition with
// spatial ops (conv, pooling, resize, prelu: XNNPACK's conventions) and in PyTorch's order
// otherwise; ops that index dims (matmul, permute, slice, cat, softmax, reductions, ...) on
// 4D tensors need PyTorch's order, so the two kinds never share a partition.
enum LayoutNeed { kAnyLayout = 0, kNhwcLayout = 1, kLogicalLayout = 2 };

LayoutNeed layout_need(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  const std::string k = key(n);
  if (k == "aten::conv2d.default" || k == "aten::convolution.default" || k == "aten::max_pool2d.default" ||
      k == "aten::avg_pool2d.default" || k == "aten::adaptive_avg_pool2d.default" || k == "aten::prelu.default" ||
      k == "aten::upsample_bilinear2d.vec" || k == "aten::upsample_bilinear2d.default" ||
      k == "ember_quantized::conv2d.default" || k == "aten::conv_transpose2d.input") {
    return kNhwcLayout;
  }
  bool any4d = false;
  for (const Arg& a : n.args) {
    for (int v : a.value_refs()) any4d |= g.values[v].type == ValueType::Tensor && g.values[v].sizes.size() == 4;
  }
  for (int v : n.output_values()) any4d |= g.values[v].sizes.size() == 4;
  if (!any4d) return kAnyLayout;
  if (is_clamp_like(k) || k == "aten::sigmoid.default" || k == "aten::hardswish.default" || k == "aten::silu.default" ||
      k == "aten::hardsigmoid.default" || k == "aten::constant_pad_nd.default" || is_scalar_binary(k) ||
      unary_ops().count(k) || k == "aten::pow.Tensor_Scalar" || k == "aten::gelu.default" ||
      k == "quantized_decomposed::quantize_per_tensor.default" ||
      k == "quantized_decomposed::dequantize_per_tensor.default") {
    return kAnyLayout;  // elementwise (Q/DQ: Convert nodes)
  }
  if (k == "aten::group_norm.default") return kAnyLayout;  // lowered for either layout
  if (k == "aten::cat.default") {  // NHWC: the axis is remapped
    for (int v : n.args[0].refs) {
      if (g.values[v].sizes.size() != 4) return kLogicalLayout;
    }
    return kAnyLayout;
  }
  if (k == "aten::add.Tensor" || k == "aten::sub.Tensor" || k == "aten::mul.Tensor" || k == "aten::div.Tensor") {
    // A non-4D activation broadcast against a 4D one: only in PyTorch's order.
    for (size_t i = 0; i < 2; ++i) {
      const Value* v = tensor_arg(g, n, i);
      if (v && v->sizes.size() != 4 && !is_const(v)) return kLogicalLayout;
    }
    return kAnyLayout;
  }
  if (k == "aten::mean.dim") {
    const Value* x = tensor_arg(g, n, 0);
    std::vector<uint64_t> axes;
    if (x && x->sizes.size() == 4 && flag(n, 2) && reduce_axes(n, 4, &axes) &&
        std::set<uint64_t>(axes.begin(), axes.end()) == std::set<uint64_t>{2, 3}) {
      return kAnyLayout;  // global average pooling in NHWC, a reduce over H, W otherwise
    }
  }
  if (reshape_ops().count(k)) {
    const Value* x = tensor_arg(g, n, 0);
    if (x && trivial4d(*x) && trivial4d(g.values[n.output_values()[0]])) return kAnyLayout;
  }
  return kLogicalLayout;
}

// True when node n reads or writes a tensor that is not float32 or is a quantized op (Q/DQ,
// int8 conv/linear, weight-only linear): such tensors keep the layout they are made in.
bool touches_quantized(const Graph& g, const Node& n) {
  const std::string k = key(n);
  if (is_quantized_op(k) || is_weight_only_op(k) || k.rfind("quantized_decomposed::", 0) == 0) return true;
  for (const Arg& a : n.args) {
    for (int v : a.value_refs()) {
      if (g.values[v].type == ValueType::Tensor && g.values[v].dtype != ScalarType::Float32) return true;
    }
  }
  for (int v : n.output_values()) {
    if (g.values[v].dtype != ScalarType::Float32) return true;
  }
  return false;
}

// Points value ids at other blob tensors (an input read through a layout transpose) for the
// lowering of one node, and restores them when it goes out of scope.
class InputSwap {
 public:
  explicit InputSwap(std::map<int, uint32_t>* id) : id_(id) {}
  ~InputSwap() {
    for (const auto& [v, original] : saved_) (*id_)[v] = original;
  }
  InputSwap(const InputSwap&) = delete;
  InputSwap& operator=(const InputSwap&) = delete;
  bool swapped(int v) const { return saved_.count(v) > 0; }
  void set(int v, uint32_t tensor) {
    saved_.emplace(v, (*id_)[v]);
    (*id_)[v] = tensor;
  }

 private:
  std::map<int, uint32_t>* id_;
  std::map<int, uint32_t> saved_;
};

// A one-element inline constant of `rank` dims (all 1), broadcast against any operand.
uint32_t scalar_constant(XnnBlobBuilder& b, size_t rank, float value) {
  return b.constant(std::vector<size_t>(rank, 1), &value);
}

// (x - mean) * rsqrt(mean((x - mean)^2) + eps) with the statistics over `axes` of the
// rank-`rank` tensor x (kept as size-1 dims): layer_norm's and group_norm's normalisation.
uint32_t normalize(XnnBlobBuilder& b, uint32_t x, std::vector<uint64_t> axes, size_t rank, double eps) {
  XnnNodeParams mean;
  mean.axes = std::move(axes);
  mean.reduce_op = 1;
  mean.flags = kKeepDimsFlag;
  const uint32_t centered = b.node(fb::OpType::Subtract, {x, b.node(fb::OpType::StaticReduce, {x}, mean)});
  const uint32_t var = b.node(fb::OpType::StaticReduce, {b.node(fb::OpType::Square, {centered})}, mean);
  const uint32_t inv = b.node(fb::OpType::ReciprocalSquareRoot,
                              {b.node(fb::OpType::Add2, {var, scalar_constant(b, rank, float(eps))})});
  return b.node(fb::OpType::Multiply2, {centered, inv});
}

// Element `index` of x along `dim` (a one-wide slice, then that dim dropped): select / unbind.
uint32_t select_along(XnnBlobBuilder& b, uint32_t x, const std::vector<int64_t>& x_sizes, size_t dim,
                      uint64_t index, const std::vector<int64_t>& out_sizes) {
  XnnNodeParams slice, shape;
  slice.offsets.assign(x_sizes.size(), 0);
  slice.sizes.assign(x_sizes.begin(), x_sizes.end());
  slice.offsets[dim] = index;
  slice.sizes[dim] = 1;
  shape.new_shape = out_sizes;
  return b.node(fb::OpType::StaticReshape, {b.node(fb::OpType::StaticSlice, {x}, slice)}, shape);
}

// Permutes NCHW data of `sizes` (rank <= 4, padded with leading 1s) into NHWC order.
std::vector<float> to_nhwc(const float* src, std::vector<int64_t> sizes, std::vector<size_t>* dims) {
  while (sizes.size() < 4) sizes.insert(sizes.begin(), 1);
  const int64_t N = sizes[0], C = sizes[1], H = sizes[2], W = sizes[3];
  std::vector<float> out(size_t(N * C * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < H * W; ++i) out[size_t((n * H * W + i) * C + c)] = src[(n * C + c) * H * W + i];
  *dims = {size_t(N), size_t(H), size_t(W), size_t(C)};
  return out;
}

}  // namespace

std::string XnnpackPartitioner::unsupported_reason(const Graph& g, int index) {
  const Node& n = g.nodes[index];
  if (n.erased) return "erased";
  if (is_quantized_op(key(n))) return quantized_unsupported_reason(g, n);  // xnnpack_quantized.cc
  if (is_weight_only_op(key(n))) return weight_only_unsupported_reason(g, n);  // xnnpack_weight_only.cc
  // Bounded dynamic shapes only where the runtime can reshape the node (shape_polymorphic).
  const bool polymorphic = shape_polymorphic(g, n);
  auto usable = [&](const Value& v) { return polymorphic ? f32_tensor(v) : f32_static(v); };
  for (int v : n.output_values()) {
    if (!usable(g.values[v])) return "output is not a float32 tensor of static shape (or of a reshapable op)";
  }
  if (n.output_values().size() != 1 && key(n) != "aten::unbind.int") return "not a single-output op";
  const bool is_cat = key(n) == "aten::cat.default";
  for (const Arg& a : n.args) {
    if (a.kind == Arg::Kind::Tensor && !usable(g.values[a.ref])) {
      return "input is not a float32 tensor of static shape (or of a reshapable op)";
    }
    if (a.kind == Arg::Kind::Tensors && is_cat) {
      for (int v : a.refs) {
        if (v < 0 || !f32_static(g.values[v])) return "input is not a static-shape float32 tensor";
      }
      continue;
    }
    if (a.kind == Arg::Kind::Tensors || a.kind == Arg::Kind::SymInt) return "tensor-list or symbolic argument";
  }
  const Value& out = g.values[n.output_values()[0]];
  const Value* x = tensor_arg(g, n, 0);
  const std::string k = key(n);
  const size_t rank = x ? x->sizes.size() : 0;
  if (k == "aten::conv2d.default" || k == "aten::convolution.default") {
    const Value* w = tensor_arg(g, n, 1);
    const Value* b = tensor_arg(g, n, 2);
    if (rank != 4 || !is_const(w) || w->sizes.size() != 4) return "needs a 4D input and constant 4D weight";
    // A constant image (RAFT's coordinate grid, folded at export) is not an XNNPACK activation.
    if (is_const(x)) return "the input is a constant";
    if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(b)) return "bias must be constant";
    if (n.args.size() > 4 && n.args[4].kind == Arg::Kind::String) return "string padding";
    if (k == "aten::convolution.default" && flag(n, 6)) return "transposed convolution";
    return "";
  }
  if (k == "aten::linear.default") {
    const Value* w = tensor_arg(g, n, 1);
    if (!x || rank == 0 || !is_const(w) || w->sizes.size() != 2) return "needs a constant 2D weight";
    if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(tensor_arg(g, n, 2))) return "bias must be constant";
    return "";
  }
  if (k == "aten::addmm.default") {
    const Value* m1 = tensor_arg(g, n, 1);
    const Value* m2 = tensor_arg(g, n, 2);
    if (!is_const(x) || x->sizes.size() != 1 || !m1 || m1->sizes.size() != 2 || !is_const(m2) ||
        m2->sizes.size() != 2 || x->sizes[0] != m2->sizes[1]) {
      return "needs constant 1D bias [N] and constant mat2";
    }
    if (scalar(n, 3, 1) != 1 || scalar(n, 4, 1) != 1) return "beta/alpha != 1";
    return "";
  }
  if (k == "aten::mm.default") {
    const Value* m2 = tensor_arg(g, n, 1);
    return x && rank == 2 && m2 && m2->sizes.size() == 2 ? "" : "needs 2D operands";
  }
  if (k == "aten::bmm.default" || k == "aten::matmul.default") {
    const Value* y = tensor_arg(g, n, 1);
    if (!x || !y || rank < 2 || y->sizes.size() < 2 || rank > 6 || y->sizes.size() > 6) return "needs 2D..6D operands";
    if (k == "aten::bmm.default" && (rank != 3 || y->sizes.size() != 3)) return "needs 3D operands";
    return "";
  }
  if (k == "aten::permute.default") {
    return rank >= 1 && ints(n, 1, 0, 0).size() == rank ? "" : "needs one dim per input dim";
  }
  if (k == "aten::transpose.int") return rank >= 1 ? "" : "scalar input";
  if (k == "aten::slice.Tensor") {
    if (!x || rank == 0) return "scalar input";
    if (n.args.size() > 4 && n.args[4].kind == Arg::Kind::Int && n.args[4].i != 1) return "step != 1";
    for (size_t i = 2; i < 4 && i < n.args.size(); ++i) {
      if (n.args[i].kind != Arg::Kind::Int && n.args[i].kind != Arg::Kind::None) return "symbolic start/end";
    }
    for (int64_t d : out.sizes) {
      if (d == 0) return "empty slice";
    }
    return "";
  }
  if (k == "aten::unbind.int") {  // timm's attention: q, k, v = qkv.unbind(0)
    if (!x || rank == 0) return "scalar input";
    const int64_t dim = norm_dim(n.args.size() > 1 && n.args[1].kind == Arg::Kind::Int ? n.args[1].i : 0, rank);
    if (dim < 0 || dim >= int64_t(rank)) return "dim out of range";
    return n.output_values().size() == size_t(x->sizes[size_t(dim)]) ? "" : "outputs do not match the dim's size";
  }
  if (k == "aten::select.int") {
    if (!x || rank == 0 || n.args.size() < 3 || n.args[2].kind != Arg::Kind::Int) return "symbolic index";
    const int64_t dim = norm_dim(n.args[1].i, rank);
    if (dim < 0 || dim >= int64_t(rank)) return "dim out of range";
    const int64_t size = x->sizes[size_t(dim)], index = n.args[2].i;
    return index >= -size && index < size ? "" : "index out of range";
  }
  if (k == "aten::scaled_dot_product_attention.default") {
    const Value* kk = tensor_arg(g, n, 1);
    const Value* v = tensor_arg(g, n, 2);
    if (!x || !kk || !v || rank < 2 || kk->sizes.size() != rank || v->sizes.size() != rank) return "attention ranks";
    if (n.args.size() > 4 && has_scalar(n, 4) && scalar(n, 4, 0) != 0) return "attention dropout";
    if (n.args.size() > 7 && flag(n, 7)) return "enable_gqa";
    if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::None && !has_scalar(n, 6)) return "attention scale";
    if (flag(n, 5) && tensor_arg(g, n, 3) != nullptr) return "causal attention with a mask";
    if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None && tensor_arg(g, n, 3) == nullptr) return "mask";
    return "";
  }
  if (k == "aten::cat.default") {
    if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensors) return "no tensor list";
    const std::vector<int>& refs = n.args[0].refs;
    if (refs.size() < 2 || refs.size() > 5) return "concatenates 2..5 tensors";
    for (int v : refs) {
      if (g.values[v].sizes.size() != out.sizes.size() || g.values[v].numel() == 0) return "inputs of another rank or empty";
    }
    return out.sizes.empty() ? "scalar output" : "";
  }
  if (k == "aten::gelu.default") {
    const std::string approx = n.args.size() > 1 && n.args[1].kind == Arg::Kind::String ? n.args[1].s : "none";
    return approx == "none" || approx == "tanh" ? "" : "unknown approximation";
  }
  if (unary_ops().count(k)) return x ? "" : "no input";
  if (k == "aten::pow.Tensor_Scalar") {
    return x && (scalar(n, 1, 0) == 2 || scalar(n, 1, 0) == 3) ? "" : "only exponents 2 and 3";
  }
  if (k == "aten::repeat_interleave.self_int") {
    if (!x || rank == 0 || rank > 5 || n.args.size() < 3 || n.args[1].kind != Arg::Kind::Int ||
        n.args[2].kind != Arg::Kind::Int || n.args[1].i < 1) {
      return "needs constant repeats, a dim and rank <= 5";
    }
    const int64_t dim = norm_dim(n.args[2].i, rank);
    return dim >= 0 && dim < int64_t(rank) ? "" : "dim out of range";
  }
  if (k == "aten::sum.dim_IntList" || (k == "aten::mean.dim" && !(rank == 4 && flag(n, 2)))) {
    std::vector<uint64_t> axes;
    if (!x || rank == 0 || !reduce_axes(n, rank, &axes)) return "bad reduction dims";
    if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None) return "dtype argument";
    return "";
  }
  if (k == "aten::expand.default") {
    if (!x || out.sizes.size() > 6 || rank > out.sizes.size()) return "rank > 6 or shrinking rank";
    return "";
  }
  if (k == "aten::conv_transpose2d.input") {  // UNet upsampling: XNNPACK's deconvolution
    const Value* w = tensor_arg(g, n, 1);
    if (rank != 4 || !is_const(w) || w->sizes.size() != 4) return "needs a 4D input and constant 4D weight";
    // A constant image (RAFT's coordinate grid, folded at export) is not an XNNPACK activation.
    if (is_const(x)) return "the input is a constant";
    if (n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_const(tensor_arg(g, n, 2))) {
      return "bias must be constant";
    }
    const int64_t groups = n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int ? n.args[6].i : 1;
    if (groups <= 0 || w->sizes[0] % groups != 0 || x->sizes[1] != w->sizes[0]) return "channels do not match groups";
    const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), extra = ints(n, 5, 2, 0);
    for (int d = 0; d < 2; ++d) {
      if (stride[size_t(d)] <= 0 || pad[size_t(d)] < 0 || extra[size_t(d)] < 0 || extra[size_t(d)] >= stride[size_t(d)]) {
        return "unsupported stride / padding / output_padding";
      }
    }
    return "";
  }
  if (k == "aten::group_norm.default") {  // diffusion UNets
    if (!x || (rank != 3 && rank != 4)) return "needs a 3D or 4D input";
    if (n.args.size() < 2 || n.args[1].kind != Arg::Kind::Int) return "symbolic group count";
    const int64_t groups = n.args[1].i;
    if (groups <= 0 || x->sizes[1] % groups != 0) return "groups must divide the channels";
    for (size_t i = 2; i < 4; ++i) {
      if (i < n.args.size() && n.args[i].kind != Arg::Kind::None && !is_const(tensor_arg(g, n, i))) {
        return "weight/bias must be constant";
      }
    }
    return "";
  }
  if (k == "aten::layer_norm.default") {
    const std::vector<int64_t> shape = ints(n, 1, 1, 0);
    if (!x || rank == 0 || shape.size() != 1 || shape[0] != x->sizes.back()) return "only over the last dim";
    for (size_t i = 2; i < 4; ++i) {
      if (i < n.args.size() && n.args[i].kind != Arg::Kind::None && !is_const(tensor_arg(g, n, i))) {
        return "weight/bias must be constant";
      }
    }
    return "";
  }
  if (is_scalar_binary(k)) return x && has_scalar(n, 1) ? "" : "no scalar operand";
  if (is_clamp_like(k) || k == "aten::sigmoid.default" || k == "aten::hardswish.default" || k == "aten::silu.default" ||
      k == "aten::hardsigmoid.default") {
    return x ? "" : "no input";
  }
  if (k == "aten::max_pool2d.default") return rank == 4 ? "" : "needs 4D input";
  if (k == "aten::avg_pool2d.default") {
    if (rank != 4 || flag(n, 4)) return "needs 4D input, ceil_mode=False";
    if (n.args.size() > 6 && n.args[6].kind != Arg::Kind::None) return "divisor_override";
    const std::vector<int64_t> pad = ints(n, 3, 2, 0);
    if ((pad[0] || pad[1]) && (n.args.size() <= 5 || flag(n, 5))) return "padding with count_include_pad=True";
    return "";
  }
  if (k == "aten::adaptive_avg_pool2d.default") {
    return rank == 4 && ints(n, 1, 2, 0) == std::vector<int64_t>{1, 1} ? "" : "only output size 1x1";
  }
  if (k == "aten::mean.dim") {  // 4D with keepdim; the other cases are above
    std::vector<uint64_t> axes;
    if (!reduce_axes(n, 4, &axes)) return "bad reduction dims";
    if (n.args.size() > 3 && n.args[3].kind != Arg::Kind::None) return "dtype argument";
    return "";
  }
  if (k == "aten::add.Tensor" || k == "aten::sub.Tensor" || k == "aten::mul.Tensor" || k == "aten::div.Tensor") {
    const Value* y = tensor_arg(g, n, 1);
    if (x && !y && has_scalar(n, 1)) return "";  // x op scalar (alpha folded into the constant)
    if (!x || !y) return "scalar operand";
    if ((k == "aten::add.Tensor" || k == "aten::sub.Tensor") && scalar(n, 2, 1) != 1) return "alpha != 1";
    if (out.sizes.size() > 6) return "rank > 6";
    return "";
  }
  if (k == "aten::_softmax.default" || k == "aten::softmax.int") {
    int64_t dim = n.args.size() > 1 ? n.args[1].i : -1;
    if (dim < 0) dim += int64_t(rank);
    return rank >= 1 && dim == int64_t(rank) - 1 ? "" : "softmax must be over the last dim";
  }
  if (k == "aten::prelu.default") {
    const Value* w = tensor_arg(g, n, 1);
    return rank == 4 && is_const(w) && (w->numel() == x->sizes[1] || w->numel() == 1) ? "" : "needs 4D input, constant slope";
  }
  if (k == "aten::constant_pad_nd.default") {
    std::vector<int64_t> pad = ints(n, 1, 0, 0);
    if (pad.size() % 2 || pad.size() > 2 * rank) return "bad pad list";
    for (int64_t p : pad) {
      if (p < 0) return "negative padding";
    }
    return "";
  }
  if (reshape_ops().count(k)) return x ? "" : "no input";
  if (k == "aten::upsample_bilinear2d.vec" || k == "aten::upsample_bilinear2d.default") {
    return rank == 4 ? "" : "needs 4D input";
  }
  return "op not supported by XNNPACK";
}

std::vector<std::vector<int>> XnnpackPartitioner::claim(const Graph& g) {
  const int num = int(g.nodes.size());
  std::vector<int> group(num, -1);
  std::vector<std::vector<char>> reach;  // reach[grp][node]: node depends on group grp
  std::vector<std::vector<int>> groups;
  std::vector<bool> supported(num);
  std::vector<int> need(num, kAnyLayout);
  std::vector<int> kind;       // per group: the LayoutNeed bits of its members
  std::vector<char> quantized;  // per group: has a quantized op (int8 tensors keep one layout)
  std::vector<char> quant_op(num, 0);
  for (int i = 0; i < num; ++i) {
    supported[i] = unsupported_reason(g, i).empty();
    if (supported[i]) need[i] = layout_need(g, i);
    quant_op[i] = supported[i] && touches_quantized(g, g.nodes[i]);
  }
  for (int i = 0; i < num; ++i) {
    const Node& n = g.nodes[i];
    if (n.erased) continue;
    std::vector<int> producers;
    for (const Arg& a : n.args) {
      for (int v : a.value_refs()) {
        if (v >= 0 && g.values[v].producer >= 0) producers.push_back(g.values[v].producer);
      }
    }
    for (size_t grp = 0; grp < groups.size(); ++grp) {
      for (int p : producers) {
        if (group[p] == int(grp) || reach[grp][p]) reach[grp][i] = 1;
      }
    }
    if (!supported[i]) continue;
    int chosen = -1;
    for (int p : producers) {
      const int grp = group[p];
      // fp32 groups mix layouts (preprocess transposes where they meet); quantized ones do not.
      if (grp < 0 || ((quantized[grp] || quant_op[i]) && (kind[grp] | need[i]) == (kNhwcLayout | kLogicalLayout))) {
        continue;
      }
      bool convex = true;  // no path leaves grp and comes back through another producer
      for (int q : producers) {
        if (group[q] != grp && reach[grp][q]) convex = false;
      }
      if (convex) {
        chosen = grp;
        break;
      }
    }
    if (chosen < 0) {
      chosen = int(groups.size());
      groups.emplace_back();
      reach.emplace_back(num, 0);
      kind.push_back(kAnyLayout);
      quantized.push_back(0);
    }
    kind[chosen] |= need[i];
    quantized[chosen] |= quant_op[i];
    group[i] = chosen;
    groups[chosen].push_back(i);
    reach[chosen][i] = 0;
  }
  std::vector<std::vector<int>> out;
  for (auto& grp : groups) {
    bool useful = false;  // a group of reshapes alone is not worth a delegate call
    for (int i : grp) useful |= !reshape_ops().count(key(g.nodes[i]));
    if (useful) out.push_back(grp);
  }
  return out;
}

absl::StatusOr<exporter::DelegateBlob> XnnpackPartitioner::preprocess(const Graph& g, const exporter::Partition& p) {
  XnnBlobBuilder b;
  exporter::ConstantSlots slots(g);
  std::map<int, uint32_t> id;
  // Layouts: each 4D activation is stored NHWC (made by or for spatial ops: XNNPACK's
  // conventions) or in PyTorch's order (for ops that index dims: matmul, permute, softmax,
  // ...). A node runs in the layout it needs, or, when any does (elementwise ops), in the
  // layout of its 4D inputs; an input stored the other way is transposed once (cached) in the
  // blob. `nhwc` is the layout of the node being lowered.
  std::set<int> stored_nhwc;  // 4D activations stored NHWC
  std::map<std::pair<int, bool>, uint32_t> converted;  // (value, to NHWC) -> transposed copy
  bool nhwc = false;
  auto xd = [&](const Value& v, bool in_nhwc) {
    return in_nhwc ? xdims(v) : std::vector<size_t>(v.sizes.begin(), v.sizes.end());
  };
  auto layout_of = [&](const Value& v) {
    return stored_nhwc.count(v.id) && v.sizes.size() == 4 ? fb::Layout::NchwToNhwc : fb::Layout::AsIs;
  };
  std::map<int, int> need_of;  // node -> its LayoutNeed
  for (int i : p.nodes) need_of[i] = layout_need(g, i);
  {
    std::set<int> needs_nhwc, needs_logical;  // partition inputs by what their consumers need
    std::set<int> pin(p.inputs.begin(), p.inputs.end());
    bool any_nhwc = false;
    for (int i : p.nodes) {
      const int need = need_of[i];
      any_nhwc |= need == kNhwcLayout;
      for (const Arg& a : g.nodes[i].args) {
        for (int v : a.value_refs()) {
          if (!pin.count(v)) continue;
          if (need == kNhwcLayout) needs_nhwc.insert(v);
          if (need == kLogicalLayout) needs_logical.insert(v);
        }
      }
    }
    for (int v : p.inputs) {
      // NHWC when a consumer needs it, or when the partition works in NHWC and none objects.
      if (g.values[v].sizes.size() == 4 && (needs_nhwc.count(v) || (any_nhwc && !needs_logical.count(v)))) {
        stored_nhwc.insert(v);
      }
    }
  }
  for (int v : p.inputs) {
    const Value& val = g.values[v];
    if (is_const(&val)) continue;  // weights come through constant slots, not as arguments
    id[v] = b.input(xd(val, stored_nhwc.count(v) > 0), layout_of(val));
    if (val.dtype == ScalarType::Int8) {  // an int8 activation of a quantized program
      float scale = 0;
      int32_t zero_point = 0;
      if (!int8_value_params(g, v, &scale, &zero_point)) {
        return absl::InvalidArgumentError("xnnpack preprocess: no quantization parameters for int8 input " + val.name);
      }
      b.set_qint8(id[v], scale, zero_point);
    }
  }
  // A graph constant used as is (in place from its program segment), with XNNPACK dims.
  auto existing = [&](const Value* v, std::vector<size_t> dims) -> uint32_t {
    return b.constant_in_slot(std::move(dims), int32_t(slots.existing(v->constant)));
  };
  // A constant whose bytes had to be transformed: a new graph constant replacing `v` (or `v`
  // itself when the transform left the bytes unchanged, e.g. 1x1 conv filters).
  auto transformed = [&](const Value* v, const char* suffix, std::vector<size_t> dims,
                         const std::vector<float>& data) -> uint32_t {
    const exporter::Constant& c = g.constants[v->constant];
    if (c.data.size() == data.size() * sizeof(float) && std::memcmp(c.data.data(), data.data(), c.data.size()) == 0) {
      return existing(v, std::move(dims));
    }
    std::vector<uint8_t> bytes(data.size() * sizeof(float));
    if (!bytes.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
    const uint32_t slot = slots.add(v->constant, c.name + suffix, ScalarType::Float32,
                                    std::vector<int64_t>(dims.begin(), dims.end()), std::move(bytes));
    return b.constant_in_slot(std::move(dims), int32_t(slot));
  };
  // An operand in PyTorch's order (ops that only run in partitions without NHWC tensors, or
  // on tensors that are never NHWC): the mapped activation or the constant as is.
  auto plain = [&](const Value* v) -> uint32_t {
    if (v == nullptr) return kInvalidId;
    if (!is_const(v)) return id.count(v->id) ? id[v->id] : kInvalidId;
    return existing(v, std::vector<size_t>(v->sizes.begin(), v->sizes.end()));
  };
  // Constant operand of an elementwise op (broadcast into NHWC when the output is 4D).
  auto operand = [&](const Value* v, bool out4d) -> uint32_t {
    if (!is_const(v)) return id.count(v->id) ? id[v->id] : kInvalidId;
    if (out4d && nhwc) {
      std::vector<size_t> dims;
      std::vector<float> data = to_nhwc(float_data(g, v), v->sizes, &dims);
      return transformed(v, ".nhwc", dims, data);
    }
    return existing(v, std::vector<size_t>(v->sizes.begin(), v->sizes.end()));
  };
  // Clamp fusion: clamp node -> producer it folds into.
  std::set<int> in_partition(p.nodes.begin(), p.nodes.end());
  std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  const std::vector<int> uses = g.use_counts();
  std::map<int, int> fused_into;  // producer node -> clamp node
  std::set<int> folded;           // clamp nodes folded away
  for (int i : p.nodes) {
    const Node& n = g.nodes[i];
    if (!is_clamp_like(key(n))) continue;
    const int x = n.args[0].ref;
    const int prod = g.values[x].producer;
    if (prod >= 0 && in_partition.count(prod) && fusable_producer(key(g.nodes[prod])) && uses[x] == 1 &&
        !outputs.count(x) && !fused_into.count(prod)) {
      fused_into[prod] = i;
      folded.insert(i);
    }
  }
  // dequantize -> op -> [clamp] -> quantize chains run as the op's int8 kernel: the Q/DQ
  // nodes alias their inputs, the op reads and writes the int8 tensors.
  const QuantizedFusion quantized = plan_quantized_fusion(g, p, fused_into, folded);
  for (int i : p.nodes) {
    const Node& n = g.nodes[i];
    if (folded.count(i)) continue;
    // This node's layout; 4D inputs stored the other way are read through a transpose.
    const int need = need_of[i];
    std::vector<int> activations;  // mapped 4D activation inputs
    for (const Arg& a : n.args) {
      for (int v : a.value_refs()) {
        if (id.count(v) && !is_const(&g.values[v]) && g.values[v].sizes.size() == 4) activations.push_back(v);
      }
    }
    nhwc = need == kNhwcLayout;
    if (need == kAnyLayout) {
      for (int v : activations) nhwc |= stored_nhwc.count(v) > 0;
    }
    InputSwap swap(&id);
    for (int v : activations) {
      if ((stored_nhwc.count(v) > 0) == nhwc || swap.swapped(v)) continue;
      auto it = converted.find({v, nhwc});
      if (it == converted.end()) {
        if (g.values[v].dtype != ScalarType::Float32) {
          return absl::InternalError("xnnpack preprocess: a non-float tensor needs a layout change: " + g.values[v].name);
        }
        XnnNodeParams perm;
        perm.axes = nhwc ? std::vector<uint64_t>{0, 2, 3, 1} : std::vector<uint64_t>{0, 3, 1, 2};
        it = converted.emplace(std::make_pair(v, nhwc), b.node(fb::OpType::StaticTranspose, {id[v]}, perm)).first;
      }
      swap.set(v, it->second);
    }
    for (int v : n.output_values()) {
      if (nhwc && g.values[v].sizes.size() == 4) stored_nhwc.insert(v);
    }
    if (fused_into.count(i) && nhwc) stored_nhwc.insert(g.nodes[fused_into[i]].output_values()[0]);
    DynamicChain chain;
    if (is_weight_only_op(key(n)) && dynamic_activation_chain(g, n, &chain)) {
      // PT2E's dynamic activation quantization: the qd8 fully connected layers reading it
      // quantize x themselves, so the quantize / dequantize outputs alias x (choose_qparams'
      // scale and zero point are read by these two nodes only: nothing to emit).
      if (i != chain.choose) {
        const int from = n.args[0].ref, to = n.output_values()[0];
        if (!id.count(from)) return absl::InternalError("xnnpack preprocess: dynamic quantization input not mapped");
        id[to] = id[from];
      }
      continue;
    }
    if (quantized.aliases.count(i)) {
      const int from = n.args[0].ref, to = n.output_values()[0];
      if (!id.count(from)) return absl::InternalError("xnnpack preprocess: folded Q/DQ input not mapped");
      if (n.op == "quantized_decomposed::quantize_per_tensor") {  // the op's output becomes int8
        b.set_qint8(id[from], float(n.args[1].kind == Arg::Kind::Double ? n.args[1].d : double(n.args[1].i)),
                    int32_t(n.args[2].i));
      }
      id[to] = id[from];
      continue;
    }
    b.set_node_name(n.name);  // every blob node lowered from n (composites: several) carries it
    const std::string k = key(n);
    const Value& out = g.values[n.output_values()[0]];
    const Value* x = tensor_arg(g, n, 0);
    XnnNodeParams prm;
    if (fused_into.count(i)) clamp_range(g.nodes[fused_into[i]], &prm.output_min, &prm.output_max);
    uint32_t in = x && id.count(x->id) ? id[x->id] : kInvalidId;
    uint32_t r = kInvalidId;
    if (is_quantized_op(k)) {
      const absl::Status st = lower_quantized_node(g, i, b, slots, id, &r);
      if (!st.ok()) return st;
    } else if (is_weight_only_op(k)) {
      const absl::Status st = lower_weight_only_node(g, i, b, slots, id, &r);
      if (!st.ok()) return st;
    } else if (k == "aten::conv2d.default" || k == "aten::convolution.default") {
      const Value* w = tensor_arg(g, n, 1);
      const Value* bias = tensor_arg(g, n, 2);
      const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), dil = ints(n, 5, 2, 1);
      const int64_t groups = k == "aten::conv2d.default" ? (n.args.size() > 6 ? n.args[6].i : 1)
                                                         : (n.args.size() > 8 ? n.args[8].i : 1);
      prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
      prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
      prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
      const size_t O = size_t(w->sizes[0]), I = size_t(w->sizes[1]), KH = size_t(w->sizes[2]), KW = size_t(w->sizes[3]);
      const size_t in_channels = size_t(x->sizes[1]);
      prm.kernel = {{uint32_t(KH), uint32_t(KW)}};
      fb::OpType op = fb::OpType::Convolution2d;
      uint32_t filter = kInvalidId;
      if (groups > 1 && size_t(groups) == in_channels && I == 1 && O % size_t(groups) == 0) {
        op = fb::OpType::DepthwiseConvolution2d;
        prm.groups = uint32_t(O / in_channels);  // depth multiplier
        filter = transformed(w, ".1hwo", {1, KH, KW, O}, depthwise_oihw_to_1hwo(float_data(g, w), O, KH, KW));
      } else {
        prm.groups = uint32_t(groups);
        filter = transformed(w, ".ohwi", {O, KH, KW, I}, oihw_to_ohwi(float_data(g, w), O, I, KH, KW));
      }
      std::vector<uint32_t> ins = {in, filter};
      if (is_const(bias)) ins.push_back(existing(bias, {O}));
      r = b.node(op, ins, prm);
    } else if (k == "aten::linear.default") {
      const Value* w = tensor_arg(g, n, 1);
      const Value* bias = tensor_arg(g, n, 2);
      const size_t O = size_t(w->sizes[0]), K = size_t(w->sizes[1]);
      std::vector<uint32_t> ins = {in, existing(w, {O, K})};
      if (is_const(bias)) ins.push_back(existing(bias, {O}));
      r = b.node(fb::OpType::FullyConnected, ins, prm);
    } else if (k == "aten::bmm.default" || k == "aten::matmul.default" ||
               (k == "aten::mm.default" && !is_const(tensor_arg(g, n, 1)))) {
      r = b.node(fb::OpType::BatchMatrixMultiply, {plain(x), plain(tensor_arg(g, n, 1))});
    } else if (k == "aten::addmm.default" || k == "aten::mm.default") {
      const bool addmm = k == "aten::addmm.default";
      const Value* m1 = tensor_arg(g, n, addmm ? 1 : 0);
      const Value* m2 = tensor_arg(g, n, addmm ? 2 : 1);
      const size_t K = size_t(m2->sizes[0]), O = size_t(m2->sizes[1]);
      std::vector<float> wt(K * O);
      const float* src = float_data(g, m2);
      for (size_t a = 0; a < K; ++a)
        for (size_t c = 0; c < O; ++c) wt[c * K + a] = src[a * O + c];
      std::vector<uint32_t> ins = {id.count(m1->id) ? id[m1->id] : kInvalidId, transformed(m2, ".t", {O, K}, wt)};
      if (addmm) ins.push_back(existing(x, {O}));
      r = b.node(fb::OpType::FullyConnected, ins, prm);
    } else if (is_clamp_like(k)) {
      clamp_range(n, &prm.output_min, &prm.output_max);
      r = b.node(fb::OpType::Clamp, {in}, prm);
    } else if (k == "aten::sigmoid.default") {
      r = b.node(fb::OpType::Sigmoid, {in});
    } else if (k == "aten::hardswish.default") {
      r = b.node(fb::OpType::HardSwish, {in});
    } else if (k == "aten::silu.default") {  // x * sigmoid(x)
      r = b.node(fb::OpType::Multiply2, {in, b.node(fb::OpType::Sigmoid, {in})});
    } else if (k == "aten::hardsigmoid.default") {  // clamp(x / 6 + 1/2, 0, 1)
      const float sixth = 1.0f / 6.0f, half = 0.5f;
      const std::vector<size_t> one(xdims(*x).size(), 1);
      XnnNodeParams unit;
      unit.output_min = 0.0f;
      unit.output_max = 1.0f;
      r = b.node(fb::OpType::Add2,
                 {b.node(fb::OpType::Multiply2, {in, b.constant(one, &sixth)}), b.constant(one, &half)}, unit);
    } else if (k == "aten::max_pool2d.default" || k == "aten::avg_pool2d.default") {
      const bool max = k == "aten::max_pool2d.default";
      const std::vector<int64_t> kernel = ints(n, 1, 2, 1);
      std::vector<int64_t> stride = ints(n, 2, 2, 0);
      if (stride[0] == 0) stride = kernel;
      const std::vector<int64_t> pad = ints(n, 3, 2, 0);
      prm.kernel = {{uint32_t(kernel[0]), uint32_t(kernel[1])}};
      prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
      prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
      if (max) {
        const std::vector<int64_t> dil = ints(n, 4, 2, 1);
        prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
        // ceil_mode: extra bottom/right padding (XNNPACK max pooling ignores padded cells)
        // so the floor-mode size equals the graph's output size.
        for (int d = 0; d < 2; ++d) {
          const int64_t in_size = x->sizes[2 + d], out_size = out.sizes[2 + d];
          const int64_t extra = (out_size - 1) * stride[d] + dil[d] * (kernel[d] - 1) + 1 - (in_size + 2 * pad[d]);
          if (extra > 0) prm.padding[d == 0 ? 2 : 1] += uint32_t(extra);
        }
      }
      if (kernel[0] * kernel[1] == 1 && stride[0] == 1 && stride[1] == 1 && pad[0] == 0 && pad[1] == 0) {
        r = b.node(fb::OpType::Copy, {in});  // XNNPACK rejects 1x1 pooling; it is the identity
      } else {
        r = b.node(max ? fb::OpType::MaxPooling2d : fb::OpType::AveragePooling2d, {in}, prm);
      }
    } else if (k == "aten::adaptive_avg_pool2d.default" || (k == "aten::mean.dim" && nhwc)) {
      r = b.node(fb::OpType::GlobalAveragePooling2d, {in}, prm);
    } else if (k == "aten::mean.dim" || k == "aten::sum.dim_IntList") {
      reduce_axes(n, x->sizes.size(), &prm.axes);
      prm.reduce_op = k == "aten::mean.dim" ? 1 : 0;
      prm.flags = flag(n, 2) ? kKeepDimsFlag : 0;
      r = b.node(fb::OpType::StaticReduce, {in}, prm);
    } else if (k == "aten::permute.default" || k == "aten::transpose.int") {
      const size_t rank = x->sizes.size();
      if (k == "aten::permute.default") {
        for (int64_t d : ints(n, 1, 0, 0)) prm.axes.push_back(uint64_t(norm_dim(d, rank)));
      } else {
        for (size_t d = 0; d < rank; ++d) prm.axes.push_back(d);
        const int64_t d0 = norm_dim(n.args[1].i, rank), d1 = norm_dim(n.args[2].i, rank);
        if (d0 >= 0 && d1 >= 0 && d0 < int64_t(rank) && d1 < int64_t(rank)) std::swap(prm.axes[size_t(d0)], prm.axes[size_t(d1)]);
      }
      r = b.node(fb::OpType::StaticTranspose, {plain(x)}, prm);
    } else if (k == "aten::slice.Tensor") {
      const size_t rank = x->sizes.size();
      const int64_t dim = norm_dim(n.args.size() > 1 ? n.args[1].i : 0, rank);
      int64_t start = n.args.size() > 2 && n.args[2].kind == Arg::Kind::Int ? n.args[2].i : 0;
      const int64_t size = dim >= 0 && dim < int64_t(rank) ? x->sizes[size_t(dim)] : 0;
      if (start < 0) start += size;
      start = std::max<int64_t>(0, std::min(start, size));
      prm.offsets.assign(rank, 0);
      prm.sizes.assign(out.sizes.begin(), out.sizes.end());
      if (dim >= 0 && dim < int64_t(rank)) prm.offsets[size_t(dim)] = uint64_t(start);
      r = b.node(fb::OpType::StaticSlice, {plain(x)}, prm);
    } else if (k == "aten::cat.default") {
      std::vector<uint32_t> ins;
      const bool remap = nhwc && out.sizes.size() == 4;  // NCHW axis -> NHWC axis
      for (int v : n.args[0].refs) ins.push_back(remap ? operand(&g.values[v], true) : plain(&g.values[v]));
      prm.axis = uint32_t(norm_dim(n.args.size() > 1 ? n.args[1].i : 0, out.sizes.size()));
      if (remap) prm.axis = std::vector<uint32_t>{0, 3, 1, 2}[prm.axis];
      r = b.node(fb::OpType::Concatenate, ins, prm);
    } else if (k == "aten::unbind.int") {  // per output: a one-wide slice, then the dim dropped
      const size_t rank = x->sizes.size();
      const size_t dim = size_t(norm_dim(n.args.size() > 1 && n.args[1].kind == Arg::Kind::Int ? n.args[1].i : 0, rank));
      const std::vector<int> parts = n.output_values();
      for (size_t j = 0; j < parts.size(); ++j) {
        id[parts[j]] = select_along(b, plain(x), x->sizes, dim, uint64_t(j), g.values[parts[j]].sizes);
      }
      r = id[parts[0]];
    } else if (k == "aten::select.int") {  // a one-wide slice, then the dim dropped
      const size_t rank = x->sizes.size();
      const int64_t dim = norm_dim(n.args[1].i, rank);
      int64_t index = n.args[2].i;
      if (index < 0) index += x->sizes[size_t(dim)];
      r = select_along(b, plain(x), x->sizes, size_t(dim), uint64_t(index), out.sizes);
    } else if (k == "aten::scaled_dot_product_attention.default") {
      // softmax(q k^T * scale + mask) v: batch matmul with k transposed by the node itself.
      const Value* kk = tensor_arg(g, n, 1);
      const size_t rank = x->sizes.size();
      const int64_t l = x->sizes[rank - 2], sk = kk->sizes[rank - 2], e = x->sizes[rank - 1];
      const double scale = n.args.size() > 6 && has_scalar(n, 6) ? scalar(n, 6, 1) : 1.0 / std::sqrt(double(e));
      XnnNodeParams tb;
      tb.flags = kTransposeBFlag;
      uint32_t scores = b.node(fb::OpType::BatchMatrixMultiply, {plain(x), plain(kk)}, tb);
      scores = b.node(fb::OpType::Multiply2, {scores, scalar_constant(b, rank, float(scale))});
      const Value* mask = tensor_arg(g, n, 3);
      if (mask != nullptr) {
        scores = b.node(fb::OpType::Add2, {scores, plain(mask)});
      } else if (flag(n, 5)) {  // PyTorch's causal mask: query i sees keys j <= i (top-left aligned)
        std::vector<float> m(size_t(l * sk), 0.0f);
        for (int64_t i = 0; i < l; ++i)
          for (int64_t j = i + 1; j < sk; ++j) m[size_t(i * sk + j)] = -std::numeric_limits<float>::infinity();
        scores = b.node(fb::OpType::Add2, {scores, b.constant({size_t(l), size_t(sk)}, m.data())});
      }
      r = b.node(fb::OpType::BatchMatrixMultiply,
                 {b.node(fb::OpType::Softmax, {scores}), plain(tensor_arg(g, n, 2))});
    } else if (k == "aten::gelu.default") {
      const bool tanh = n.args.size() > 1 && n.args[1].kind == Arg::Kind::String && n.args[1].s == "tanh";
      if (!tanh) {
        r = b.node(fb::OpType::Gelu, {in});
      } else {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        const size_t rank = x->sizes.size();
        auto c = [&](float v) { return scalar_constant(b, rank, v); };
        const uint32_t inner = b.node(
            fb::OpType::Multiply2,
            {b.node(fb::OpType::Multiply2,
                    {in, b.node(fb::OpType::Add2, {b.node(fb::OpType::Multiply2,
                                                          {b.node(fb::OpType::Square, {in}), c(0.044715f)}),
                                                   c(1.0f)})}),
             c(0.7978845608028654f)});
        const uint32_t t1 = b.node(fb::OpType::Add2, {b.node(fb::OpType::Tanh, {inner}), c(1.0f)});
        r = b.node(fb::OpType::Multiply2, {b.node(fb::OpType::Multiply2, {in, t1}), c(0.5f)});
      }
    } else if (unary_ops().count(k)) {
      r = b.node(unary_ops().at(k), {in});
    } else if (k == "aten::pow.Tensor_Scalar") {
      r = b.node(fb::OpType::Square, {in});
      if (scalar(n, 1, 0) == 3) r = b.node(fb::OpType::Multiply2, {r, in});
    } else if (k == "aten::repeat_interleave.self_int") {
      // [.., s_d, ..] -> [.., s_d, 1, ..] -> + zeros [1.., r, 1..] -> [.., s_d * r, ..]
      const size_t rank = x->sizes.size(), dim = size_t(norm_dim(n.args[2].i, rank));
      const int64_t reps = n.args[1].i;
      XnnNodeParams split;
      std::vector<size_t> zd(rank + 1, 1);
      for (size_t d = 0; d <= rank; ++d) {
        split.new_shape.push_back(d <= dim ? x->sizes[d] : d == dim + 1 ? 1 : x->sizes[d - 1]);
      }
      zd[dim + 1] = size_t(reps);
      const std::vector<float> zeros(size_t(reps), 0.0f);
      const uint32_t wide = b.node(fb::OpType::Add2, {b.node(fb::OpType::StaticReshape, {plain(x)}, split),
                                                      b.constant(zd, zeros.data())});
      for (int64_t d : out.sizes) prm.new_shape.push_back(d);
      r = b.node(fb::OpType::StaticReshape, {wide}, prm);
    } else if (is_scalar_binary(k)) {
      const bool alpha = k == "aten::add.Scalar" || k == "aten::sub.Scalar";
      const uint32_t c = scalar_constant(b, x->sizes.size(), float(scalar(n, 1, 0) * (alpha ? scalar(n, 2, 1) : 1.0)));
      const fb::OpType op = k == "aten::add.Scalar"   ? fb::OpType::Add2
                            : k == "aten::sub.Scalar" ? fb::OpType::Subtract
                            : k == "aten::mul.Scalar" ? fb::OpType::Multiply2
                                                      : fb::OpType::Divide;
      r = b.node(op, {in, c}, prm);
    } else if (k == "aten::expand.default") {
      // x + zeros, the zeros shaped like the output where x broadcasts and 1 elsewhere.
      const size_t rank = out.sizes.size(), xr = x->sizes.size();
      std::vector<size_t> zd(rank, 1);
      size_t count = 1;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t xs = d + xr >= rank ? x->sizes[d + xr - rank] : 1;
        if (xs != out.sizes[d]) zd[d] = size_t(out.sizes[d]);
        count *= zd[d];
      }
      const std::vector<float> zeros(count, 0.0f);
      r = b.node(fb::OpType::Add2, {plain(x), b.constant(zd, zeros.data())});
    } else if (k == "aten::conv_transpose2d.input") {
      // PyTorch's weight [Cin, Cout/groups, KH, KW] -> XNNPACK's [groups * Cout/groups, KH, KW, Cin/groups].
      const Value* w = tensor_arg(g, n, 1);
      const Value* bias = tensor_arg(g, n, 2);
      const std::vector<int64_t> stride = ints(n, 3, 2, 1), pad = ints(n, 4, 2, 0), extra = ints(n, 5, 2, 0),
                                 dil = ints(n, 7, 2, 1);
      const size_t groups = n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int ? size_t(n.args[6].i) : 1;
      const size_t Cin = size_t(w->sizes[0]), Cog = size_t(w->sizes[1]), KH = size_t(w->sizes[2]),
                   KW = size_t(w->sizes[3]), Cig = Cin / groups, O = groups * Cog;
      const float* src = float_data(g, w);
      std::vector<float> ohwi(O * KH * KW * Cig);
      for (size_t gi = 0; gi < groups; ++gi)
        for (size_t oc = 0; oc < Cog; ++oc)
          for (size_t kh = 0; kh < KH; ++kh)
            for (size_t kw = 0; kw < KW; ++kw)
              for (size_t ic = 0; ic < Cig; ++ic)
                ohwi[(((gi * Cog + oc) * KH + kh) * KW + kw) * Cig + ic] =
                    src[(((gi * Cig + ic) * Cog + oc) * KH + kh) * KW + kw];
      prm.stride = {{uint32_t(stride[0]), uint32_t(stride[1])}};
      prm.dilation = {{uint32_t(dil[0]), uint32_t(dil[1])}};
      prm.padding = {{uint32_t(pad[0]), uint32_t(pad[1]), uint32_t(pad[0]), uint32_t(pad[1])}};
      prm.adjustment = {{uint32_t(extra[0]), uint32_t(extra[1])}};
      prm.kernel = {{uint32_t(KH), uint32_t(KW)}};
      prm.groups = uint32_t(groups);
      std::vector<uint32_t> ins = {in, transformed(w, ".ohwi", {O, KH, KW, Cig}, ohwi)};
      if (is_const(bias)) ins.push_back(existing(bias, {O}));
      r = b.node(fb::OpType::Deconvolution2d, ins, prm);
    } else if (k == "aten::group_norm.default") {
      // Per sample and group: (x - mean) * rsqrt(var + eps), then a per-channel weight and bias.
      // NHWC [N, H, W, C] is viewed as [N, HW, G, C/G] (statistics over dims 1, 3), PyTorch's
      // order [N, C, ...] as [N, G, C/G * spatial] (over dim 2); the affine parameters then
      // broadcast along C: the last dim in NHWC, dim 1 ([C, 1, ..]) otherwise.
      const size_t rank = x->sizes.size();
      const int64_t N = x->sizes[0], C = x->sizes[1], G = n.args[1].i;
      int64_t spatial = 1;
      for (size_t d = 2; d < rank; ++d) spatial *= x->sizes[d];
      const bool channels_last = nhwc && rank == 4;
      XnnNodeParams grouped, back;
      grouped.new_shape = channels_last ? std::vector<int64_t>{N, spatial, G, C / G}
                                        : std::vector<int64_t>{N, G, (C / G) * spatial};
      const double eps = n.args.size() > 4 && n.args[4].kind == Arg::Kind::Double ? n.args[4].d : 1e-5;
      const uint32_t normed = normalize(b, b.node(fb::OpType::StaticReshape, {in}, grouped),
                                        channels_last ? std::vector<uint64_t>{1, 3} : std::vector<uint64_t>{2},
                                        grouped.new_shape.size(), eps);
      for (size_t d : xd(out, nhwc)) back.new_shape.push_back(int64_t(d));
      r = b.node(fb::OpType::StaticReshape, {normed}, back);
      std::vector<size_t> cdims = {size_t(C)};  // per-channel constants, broadcast against r
      if (!channels_last) cdims.resize(rank - 1, 1);
      const Value* w = tensor_arg(g, n, 2);
      const Value* bias = tensor_arg(g, n, 3);
      if (is_const(w)) r = b.node(fb::OpType::Multiply2, {r, existing(w, cdims)});
      if (is_const(bias)) r = b.node(fb::OpType::Add2, {r, existing(bias, cdims)});
    } else if (k == "aten::layer_norm.default") {
      // (x - mean) * rsqrt(mean((x - mean)^2) + eps) * weight + bias, over the last dim.
      const size_t rank = x->sizes.size();
      const int64_t C = x->sizes.back();
      const double eps = n.args.size() > 4 && n.args[4].kind == Arg::Kind::Double ? n.args[4].d : 1e-5;
      r = normalize(b, plain(x), {uint64_t(rank - 1)}, rank, eps);
      const Value* w = tensor_arg(g, n, 2);
      const Value* bias = tensor_arg(g, n, 3);
      if (is_const(w)) r = b.node(fb::OpType::Multiply2, {r, existing(w, {size_t(C)})});
      if (is_const(bias)) r = b.node(fb::OpType::Add2, {r, existing(bias, {size_t(C)})});
    } else if (k == "aten::add.Tensor" || k == "aten::sub.Tensor" || k == "aten::mul.Tensor" || k == "aten::div.Tensor") {
      const bool out4d = out.sizes.size() == 4;
      const uint32_t a = operand(x, out4d);
      uint32_t c = kInvalidId;
      if (tensor_arg(g, n, 1) != nullptr) {
        c = operand(tensor_arg(g, n, 1), out4d);
      } else {  // x op scalar; add/sub: x op alpha * scalar
        const bool alpha = k == "aten::add.Tensor" || k == "aten::sub.Tensor";
        c = scalar_constant(b, out.sizes.size(), float(scalar(n, 1, 0) * (alpha ? scalar(n, 2, 1) : 1.0)));
      }
      const fb::OpType op = k == "aten::add.Tensor"   ? fb::OpType::Add2
                            : k == "aten::sub.Tensor" ? fb::OpType::Subtract
                            : k == "aten::mul.Tensor" ? fb::OpType::Multiply2
                                                      : fb::OpType::Divide;
      r = b.node(op, {a, c}, prm);
    } else if (k == "aten::_softmax.default" || k == "aten::softmax.int") {
      r = b.node(fb::OpType::Softmax, {in});
    } else if (k == "aten::prelu.default") {
      const Value* w = tensor_arg(g, n, 1);
      std::vector<float> slope(size_t(x->sizes[1]), float_data(g, w)[0]);
      if (w->numel() == x->sizes[1]) slope.assign(float_data(g, w), float_data(g, w) + x->sizes[1]);
      r = b.node(fb::OpType::Prelu, {in, transformed(w, ".slope", {slope.size()}, slope)});
    } else if (k == "aten::constant_pad_nd.default") {
      const std::vector<int64_t> pad = ints(n, 1, 0, 0);
      const size_t rank = x->sizes.size();
      std::vector<uint64_t> pre(rank, 0), post(rank, 0);
      for (size_t j = 0; j < pad.size() / 2; ++j) {
        pre[rank - 1 - j] = uint64_t(pad[2 * j]);
        post[rank - 1 - j] = uint64_t(pad[2 * j + 1]);
      }
      if (rank == 4 && nhwc) {
        prm.pre_paddings = {pre[0], pre[2], pre[3], pre[1]};
        prm.post_paddings = {post[0], post[2], post[3], post[1]};
      } else {
        prm.pre_paddings = pre;
        prm.post_paddings = post;
      }
      prm.padding_value = float(scalar(n, 2, 0));
      r = b.node(fb::OpType::StaticConstantPad, {in}, prm);
    } else if (reshape_ops().count(k)) {
      for (size_t d : xd(out, nhwc)) prm.new_shape.push_back(int64_t(d));
      r = b.node(fb::OpType::StaticReshape, {in}, prm);
    } else if (k == "aten::upsample_bilinear2d.vec" || k == "aten::upsample_bilinear2d.default") {
      prm.new_height = uint64_t(out.sizes[2]);
      prm.new_width = uint64_t(out.sizes[3]);
      prm.flags = flag(n, 2) ? 0x8 /* XNN_FLAG_ALIGN_CORNERS */ : 0;
      r = b.node(fb::OpType::StaticResizeBilinear2d, {in}, prm);
    } else {
      return absl::InvalidArgumentError("xnnpack preprocess: unexpected op " + k);
    }
    if (!b.ok()) {
      std::string detail;
      for (const Arg& a : n.args) {
        for (int v : a.value_refs()) {
          const int prod = g.values[v].producer;
          detail += " [" + g.values[v].name + ": producer " + std::to_string(prod) +
                    (in_partition.count(prod) ? " (in partition)" : "") + (id.count(v) ? ", mapped" : ", unmapped") +
                    (folded.count(prod) ? ", folded" : "") + "]";
        }
      }
      return absl::InvalidArgumentError("xnnpack preprocess: node " + std::to_string(i) + " (" + k + "): " + b.error() +
                                        "; inputs:" + detail);
    }
    id[out.id] = r;
    if (fused_into.count(i)) id[g.nodes[fused_into[i]].output_values()[0]] = r;
  }
  for (int v : p.outputs) {
    if (!id.count(v)) return absl::InternalError("xnnpack preprocess: partition output not produced");
    b.mark_output(id[v], layout_of(g.values[v]));
  }
  if (!b.ok()) return absl::InvalidArgumentError("xnnpack preprocess: " + b.error());
  exporter::DelegateBlob blob;
  blob.data = b.build();
  slots.finish(&blob);
  std::string summary = exporter::summarize_partition(g, p);
  if (!folded.empty()) summary += " (" + std::to_string(folded.size()) + " activations fused)";
  if (quantized.fused_ops > 0) summary += " (" + std::to_string(quantized.fused_ops) + " ops in int8)";
  blob.compile_specs.push_back({exporter::kSummarySpec, std::vector<uint8_t>(summary.begin(), summary.end())});
  CompileOptions options;
  options.num_threads = uint32_t(std::max(0, num_threads_));
  options.fp16 = fp16_;
  options.has_conv_block_bytes = conv_block_bytes_ >= 0;
  if (options.has_conv_block_bytes) options.conv_block_bytes = uint64_t(conv_block_bytes_);
  EncodedSpec specs[kMaxCompileSpecs];
  const size_t n = encode_compile_options(options, specs);
  for (size_t k = 0; k < n; ++k) {
    blob.compile_specs.push_back({specs[k].key, std::vector<uint8_t>(specs[k].bytes, specs[k].bytes + specs[k].size)});
  }
  return blob;
}

}  // namespace xnnpack
}  // namespace ember
