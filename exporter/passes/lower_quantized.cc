// Lowers PT2E's quantize/dequantize chains around convolutions and linear layers to Ember's
// integer operators (ember_quantized::conv2d / ::linear, kernels/portable/quantized/):
//
//   dequantize_per_tensor(a) ─┐
//   dequantize_per_channel(W) ┼─> conv2d / convolution / linear ─> [activation] ─> quantize_per_tensor -> b
//   bias (float constant) ────┘
//
// becomes `b = ember_quantized::conv2d(a, ..., W, scales, bias, ..., output_min, output_max)`:
// the int8 weight constant is kept as int8 (a quarter of the float bytes in the program) and
// a relu / relu6 / hardtanh / clamp becomes the output range (fusable_activation). Conditions (anything else is left as the
// float ops between Q/DQ, which run correctly on the portable kernels): static per-tensor
// activation parameters, int8/uint8 activations of one dtype in and out; constant int8
// weights quantized symmetrically per output channel (axis 0, zero points all 0) with float32
// scales; a float32 constant bias or none; a 2-D, non-transposed convolution; every
// intermediate value read only by the next node of the chain.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

// The static per-tensor parameters of a quantize/dequantize_per_tensor.default node.
struct TensorQuant {
  double scale = 0;
  int64_t zero_point = 0, qmin = 0, qmax = 0;
  ScalarType dtype = ScalarType::Int8;
};

bool per_tensor_params(const Node& n, TensorQuant* q) {
  if (n.overload != "default" || n.args.size() < 6) return false;
  if (n.args[1].kind != Arg::Kind::Double && n.args[1].kind != Arg::Kind::Int) return false;
  for (int i = 2; i <= 5; ++i) {
    if (n.args[i].kind != Arg::Kind::Int) return false;
  }
  q->scale = n.args[1].kind == Arg::Kind::Double ? n.args[1].d : static_cast<double>(n.args[1].i);
  q->zero_point = n.args[2].i;
  q->qmin = n.args[3].i;
  q->qmax = n.args[4].i;
  q->dtype = static_cast<ScalarType>(n.args[5].i);
  if (n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int && n.args[6].i != static_cast<int64_t>(ScalarType::Float32)) {
    return false;  // dequantize to another float type
  }
  return q->scale > 0 && (q->dtype == ScalarType::Int8 || q->dtype == ScalarType::UInt8);
}

const Constant* constant_of(const Graph& g, const Arg& a, ScalarType dtype) {
  if (a.kind != Arg::Kind::Tensor) return nullptr;
  const Value& v = g.values[a.ref];
  if (v.role != ValueRole::Constant || v.constant < 0 || v.dtype != dtype) return nullptr;
  return &g.constants[v.constant];
}

bool all_zero(const Constant& c) {
  for (uint8_t b : c.data) {
    if (b != 0) return false;
  }
  return true;
}

// Scalar argument i of a node as a double; false when absent or not a number.
bool scalar_arg(const Node& n, size_t i, double* v) {
  if (i >= n.args.size()) return false;
  if (n.args[i].kind == Arg::Kind::Double) *v = n.args[i].d;
  else if (n.args[i].kind == Arg::Kind::Int) *v = static_cast<double>(n.args[i].i);
  else return false;
  return true;
}

}  // namespace

bool fusable_activation(const Node& n, double* lo, double* hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (n.overload != "default" && n.overload != "Tensor") return false;
  if (n.op == "aten::relu") {
    *lo = 0;
    return true;
  }
  if (n.op == "aten::relu6") {
    *lo = 0;
    *hi = 6;
    return true;
  }
  if (n.op == "aten::hardtanh") return scalar_arg(n, 1, lo) && scalar_arg(n, 2, hi) && *lo <= *hi;
  if (n.op == "aten::clamp" && n.overload == "default") {  // None bounds stay open
    const bool has_lo = scalar_arg(n, 1, lo), has_hi = scalar_arg(n, 2, hi);
    if (!has_lo && n.args.size() > 1 && n.args[1].kind != Arg::Kind::None) return false;
    if (!has_hi && n.args.size() > 2 && n.args[2].kind != Arg::Kind::None) return false;
    if (!has_lo) *lo = -INFINITY;
    if (!has_hi) *hi = INFINITY;
    return (has_lo || has_hi) && *lo <= *hi;
  }
  return false;
}

namespace {

class Lowering {
 public:
  explicit Lowering(Graph& g) : g_(g) { refresh(); }

  // Readers of each value: live node indices (a graph output or write-back counts as -1).
  void refresh() { readers_ = g_.value_readers(); }

  // The live node producing tensor argument `a`, when it is `op`; else null.
  Node* producer(const Arg& a, const char* op) {
    if (a.kind != Arg::Kind::Tensor) return nullptr;
    const int p = g_.values[a.ref].producer;
    if (p < 0 || g_.nodes[p].erased || g_.nodes[p].op != op) return nullptr;
    return &g_.nodes[p];
  }

  // The only reader of `value`, when it is one live node; else -1.
  int sole_reader(int value) const {
    const std::vector<int>& r = readers_[value];
    return r.size() == 1 ? r[0] : -1;
  }

  bool lower(int index) {
    Node& op = g_.nodes[index];
    const bool linear = op.op == "aten::linear";
    const bool conv2d = op.op == "aten::conv2d";
    const bool convolution = op.op == "aten::convolution";
    if ((!linear && !conv2d && !convolution) || op.overload != "default" || op.outputs.size() != 1 ||
        op.outputs[0].kind != Arg::Kind::Tensor || op.args.size() < 3) {
      return false;
    }
    if (convolution && (op.args.size() != 9 || op.args[6].kind != Arg::Kind::Bool || op.args[6].b)) return false;

    // Input: dequantize_per_tensor of an int8/uint8 activation.
    Node* dq_in = producer(op.args[0], "quantized_decomposed::dequantize_per_tensor");
    TensorQuant in_q;
    if (dq_in == nullptr || !per_tensor_params(*dq_in, &in_q) || dq_in->args[0].kind != Arg::Kind::Tensor ||
        g_.values[dq_in->args[0].ref].dtype != in_q.dtype) {
      return false;
    }
    // Weight: dequantize_per_channel of an int8 constant, symmetric along axis 0.
    Node* dq_w = producer(op.args[1], "quantized_decomposed::dequantize_per_channel");
    if (dq_w == nullptr || dq_w->overload != "default" || dq_w->args.size() < 7) return false;
    const Constant* w = constant_of(g_, dq_w->args[0], ScalarType::Int8);
    const Constant* scales = constant_of(g_, dq_w->args[1], ScalarType::Float32);
    if (w == nullptr || scales == nullptr || w->sizes.empty()) return false;
    if (dq_w->args[3].kind != Arg::Kind::Int || dq_w->args[3].i != 0) return false;  // axis 0
    if (dq_w->args[2].kind != Arg::Kind::None) {
      const Value& zv = g_.values[dq_w->args[2].ref];
      if (zv.role != ValueRole::Constant || zv.constant < 0 || !all_zero(g_.constants[zv.constant])) return false;
    }
    const int64_t channels = w->sizes[0];
    if (scales->sizes != std::vector<int64_t>{channels}) return false;
    if (linear ? w->sizes.size() != 2 : w->sizes.size() != 4) return false;
    // Bias: none or a float32 constant [O].
    const Arg& bias = op.args[2];
    if (bias.kind != Arg::Kind::None) {
      const Constant* b = constant_of(g_, bias, ScalarType::Float32);
      if (b == nullptr || b->sizes != std::vector<int64_t>{channels}) return false;
    }

    // Output: [relu / relu6 / hardtanh / clamp ->] quantize_per_tensor, each the sole reader
    // of what precedes it.
    int out_value = op.outputs[0].ref;
    int next = sole_reader(out_value);
    int relu = -1;
    double act_lo = -INFINITY, act_hi = INFINITY;
    if (next >= 0 && fusable_activation(g_.nodes[next], &act_lo, &act_hi) && g_.nodes[next].outputs.size() == 1 &&
        g_.nodes[next].outputs[0].kind == Arg::Kind::Tensor) {
      relu = next;
      out_value = g_.nodes[relu].outputs[0].ref;
      next = sole_reader(out_value);
    }
    if (next < 0 || g_.nodes[next].op != "quantized_decomposed::quantize_per_tensor") return false;
    Node& q_out = g_.nodes[next];
    TensorQuant out_q;
    if (!per_tensor_params(q_out, &out_q) || out_q.dtype != in_q.dtype) return false;
    if (q_out.outputs.size() != 1 || q_out.outputs[0].kind != Arg::Kind::Tensor) return false;

    Node n;
    n.op = linear ? "ember_quantized::linear" : "ember_quantized::conv2d";
    n.overload = "default";
    n.schema = find_op_schema(n.op, n.overload);
    if (n.schema == nullptr) return false;
    n.source = op.source;
    n.name = op.name;
    std::vector<Arg> args = {dq_in->args[0], Arg::real(in_q.scale), Arg::integer(in_q.zero_point),
                             dq_w->args[0], dq_w->args[1], bias};
    if (!linear) {
      // conv2d(input, weight, bias, stride, padding, dilation, groups);
      // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
      const Arg& stride = op.args[3];
      const Arg& padding = op.args[4];
      const Arg& dilation = op.args[5];
      const Arg& groups = convolution ? op.args[8] : op.args[6];
      for (const Arg* a : {&stride, &padding, &dilation}) {
        if (a->kind != Arg::Kind::Ints) return false;
      }
      if (groups.kind != Arg::Kind::Int) return false;
      args.insert(args.end(), {stride, padding, dilation, groups});
    }
    // A fused activation clamps at its bounds' quantized values: quantizing is monotonic, so
    // q(clamp(y, lo, hi)) = clamp(q(y), q(lo), q(hi)), the same integers as clamp then quantize.
    int64_t out_min = out_q.qmin, out_max = out_q.qmax;
    if (relu >= 0) {
      const float inv = static_cast<float>(1.0 / out_q.scale);
      auto q_of = [&](double v) {
        const double r = std::nearbyint(static_cast<float>(v) * inv) + static_cast<double>(out_q.zero_point);
        return static_cast<int64_t>(std::min<double>(out_q.qmax, std::max<double>(out_q.qmin, r)));
      };
      if (std::isfinite(act_lo)) out_min = q_of(act_lo);
      if (std::isfinite(act_hi)) out_max = q_of(act_hi);
      if (out_min > out_max) return false;
    }
    args.insert(args.end(), {Arg::real(out_q.scale), Arg::integer(out_q.zero_point), Arg::integer(out_min),
                             Arg::integer(out_max)});
    for (const SchemaArg& a : n.schema->args) n.arg_names.push_back(a.name);
    if (args.size() != n.arg_names.size()) return false;
    n.args = std::move(args);
    n.outputs = q_out.outputs;

    // The new node takes the quantize node's place (its output keeps its producer index);
    // the chain's other nodes go when nothing else reads them.
    const int dq_in_index = g_.values[op.args[0].ref].producer;
    const int dq_w_index = g_.values[op.args[1].ref].producer;
    const int dq_in_out = dq_in->outputs[0].ref, dq_w_out = dq_w->outputs[0].ref;
    g_.nodes[next] = std::move(n);
    g_.nodes[index].erased = true;
    if (relu >= 0) g_.nodes[relu].erased = true;
    refresh();
    if (readers_[dq_in_out].empty()) g_.nodes[dq_in_index].erased = true;
    if (readers_[dq_w_out].empty()) g_.nodes[dq_w_index].erased = true;
    refresh();
    return true;
  }

 private:
  Graph& g_;
  std::vector<std::vector<int>> readers_;
};

}  // namespace

int lower_quantized_ops(Graph& g) {
  Lowering l(g);
  int lowered = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!g.nodes[i].erased && l.lower(static_cast<int>(i))) ++lowered;
  }
  if (lowered > 0) g.compact();
  return lowered;
}

}  // namespace exporter
}  // namespace ember
