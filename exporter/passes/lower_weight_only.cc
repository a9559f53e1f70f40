// Lowers weight-only quantized layers to Ember's weight-only operators
// (kernels/portable/quantized/weight_only_ops.cc), so the float weight is never rebuilt when
// the program runs:
//
//   w = dequantize_per_channel(q int8 [N, K], scales [N], zero points 0 or None, axis 0)
//   w = dequantize_per_channel_group(q int8 [N, K], scales [N, K / G], None or zeros, G)
//   linear(x, w, bias)       -> ember_quantized::linear_weight_only(x, q', scales', G, bits, bias)
//   embedding(w, indices)    -> ember_quantized::embedding_weight_only(q', scales', G, bits, indices)
//
// Values in [-8, 7] (what `--quantize int4-weight` writes) are packed two per byte (bits 4,
// uint8 [N, K / 2], value + 8 per nibble, low nibble first), halving the weight's bytes again;
// other int8 weights stay one per byte (bits 8). Per-channel scales become [N, 1] (G = K).
// Conditions (anything else is left as it is, correct on the portable kernels): constant
// weights, scales and zero points; symmetric (zero points all 0); float32 output; a float32
// constant bias or none; every reader of the dequantized weight is such a linear (as its
// weight) or embedding (as its table, without max_norm-style extras) — a weight shared by the
// embedding and the output head (tied) is lowered for both.
#include <cstring>
#include <string>
#include <vector>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"

namespace ember {
namespace exporter {
namespace {

const Constant* constant_arg(const Graph& g, const Arg& a, ScalarType dtype) {
  if (a.kind != Arg::Kind::Tensor) return nullptr;
  const Value& v = g.values[a.ref];
  if (v.role != ValueRole::Constant || v.constant < 0 || v.dtype != dtype) return nullptr;
  return &g.constants[v.constant];
}

bool zero_or_none(const Graph& g, const Arg& a) {
  if (a.kind == Arg::Kind::None) return true;
  if (a.kind != Arg::Kind::Tensor) return false;
  const Value& v = g.values[a.ref];
  if (v.role != ValueRole::Constant || v.constant < 0) return false;
  for (uint8_t b : g.constants[v.constant].data) {
    if (b != 0) return false;
  }
  return true;
}

// The quantized weight behind a dequantize node, in the operators' layout.
struct WeightOnly {
  std::vector<uint8_t> data;   // int8 [N, K] or packed uint8 [N, K / 2]
  std::vector<float> scales;   // [N, K / group]
  int64_t rows = 0, cols = 0, group = 0;
  int bits = 8;
};

bool read_dequantize(const Graph& g, const Node& dq, WeightOnly* w) {
  const bool grouped = dq.op == "quantized_decomposed::dequantize_per_channel_group";
  if (dq.overload != "default" || dq.outputs.size() != 1 || dq.outputs[0].kind != Arg::Kind::Tensor) return false;
  if (grouped ? dq.args.size() != 8 : dq.args.size() < 7) return false;
  const Constant* q = constant_arg(g, dq.args[0], ScalarType::Int8);
  const Constant* s = constant_arg(g, dq.args[1], ScalarType::Float32);
  if (q == nullptr || s == nullptr || q->sizes.size() != 2 || !zero_or_none(g, dq.args[2])) return false;
  w->rows = q->sizes[0];
  w->cols = q->sizes[1];
  if (w->rows < 1 || w->cols < 1) return false;
  int64_t qmin = 0, qmax = 0;
  if (grouped) {
    // (input, scales, zero_points, quant_min, quant_max, dtype, group_size, output_dtype)
    for (int i : {3, 4, 5, 6, 7}) {
      if (dq.args[i].kind != Arg::Kind::Int) return false;
    }
    qmin = dq.args[3].i;
    qmax = dq.args[4].i;
    w->group = dq.args[6].i;
    if (dq.args[7].i != static_cast<int64_t>(ScalarType::Float32)) return false;
    if (w->group < 1 || w->cols % w->group != 0 || s->sizes != std::vector<int64_t>{w->rows, w->cols / w->group}) return false;
  } else {
    // (input, scales, zero_points, axis, quant_min, quant_max, dtype, [out_dtype])
    for (int i : {3, 4, 5, 6}) {
      if (dq.args[i].kind != Arg::Kind::Int) return false;
    }
    if (dq.args[3].i != 0) return false;
    if (dq.args.size() > 7 && dq.args[7].kind == Arg::Kind::Int && dq.args[7].i != static_cast<int64_t>(ScalarType::Float32)) return false;
    qmin = dq.args[4].i;
    qmax = dq.args[5].i;
    w->group = w->cols;
    if (s->sizes != std::vector<int64_t>{w->rows}) return false;
  }
  if (qmin < -128 || qmax > 127 || qmin > qmax) return false;
  const int8_t* values = reinterpret_cast<const int8_t*>(q->data.data());
  const size_t count = static_cast<size_t>(w->rows * w->cols);
  if (q->data.size() != count || s->data.size() != static_cast<size_t>(s->sizes[0] * (grouped ? s->sizes[1] : 1)) * 4) return false;
  bool fits_int4 = qmin >= -8 && qmax <= 7 && w->cols % 2 == 0 && w->group % 2 == 0;
  for (size_t i = 0; fits_int4 && i < count; ++i) fits_int4 = values[i] >= -8 && values[i] <= 7;
  w->bits = fits_int4 ? 4 : 8;
  if (w->bits == 8) {
    w->data.assign(q->data.begin(), q->data.end());
  } else {
    w->data.assign(count / 2, 0);
    for (size_t i = 0; i < count; i += 2) {
      w->data[i / 2] = static_cast<uint8_t>((values[i] + 8) | ((values[i + 1] + 8) << 4));
    }
  }
  w->scales.resize(s->data.size() / 4);
  std::memcpy(w->scales.data(), s->data.data(), s->data.size());
  return true;
}

class WeightOnlyLowering {
 public:
  explicit WeightOnlyLowering(Graph& g) : g_(g), readers_(g.value_readers()) {}

  // Lowers every reader of dequantize node `index`; false (graph untouched) unless all can be.
  bool lower(int index) {
    const Node& dq = g_.nodes[index];
    if (dq.op != "quantized_decomposed::dequantize_per_channel" &&
        dq.op != "quantized_decomposed::dequantize_per_channel_group") {
      return false;
    }
    const int w_value = dq.outputs.empty() || dq.outputs[0].kind != Arg::Kind::Tensor ? -1 : dq.outputs[0].ref;
    if (w_value < 0 || readers_[w_value].empty()) return false;
    for (int r : readers_[w_value]) {
      if (r < 0 || !(is_linear_weight(g_.nodes[r], w_value) || is_embedding_table(g_.nodes[r], w_value))) return false;
    }
    WeightOnly w;
    if (!read_dequantize(g_, dq, &w)) return false;
    const std::string base = g_.values[dq.args[0].ref].name;
    const int q = add_constant(base + (w.bits == 4 ? "_packed_int4" : "_weight_only"),
                               w.bits == 4 ? ScalarType::UInt8 : ScalarType::Int8,
                               {w.rows, w.bits == 4 ? w.cols / 2 : w.cols}, w.data.data(), w.data.size());
    const int s = add_constant(base + "_weight_only_scales", ScalarType::Float32, {w.rows, w.cols / w.group},
                               w.scales.data(), w.scales.size() * 4);
    for (int r : readers_[w_value]) {
      Node& old = g_.nodes[r];
      Node n;
      n.overload = "default";
      n.source = old.source;
      n.name = old.name;
      n.outputs = old.outputs;
      if (old.op == "aten::linear") {
        n.op = "ember_quantized::linear_weight_only";
        n.args = {old.args[0], Arg::tensor(q), Arg::tensor(s), Arg::integer(w.group), Arg::integer(w.bits), old.args[2]};
      } else {
        n.op = "ember_quantized::embedding_weight_only";
        n.args = {Arg::tensor(q), Arg::tensor(s), Arg::integer(w.group), Arg::integer(w.bits), old.args[1]};
      }
      n.schema = find_op_schema(n.op, n.overload);
      if (n.schema == nullptr) return false;
      for (const SchemaArg& a : n.schema->args) n.arg_names.push_back(a.name);
      old = std::move(n);
    }
    g_.nodes[index].erased = true;
    return true;
  }

 private:
  bool is_linear_weight(const Node& n, int w) const {
    if (n.op != "aten::linear" || n.overload != "default" || n.args.size() != 3) return false;
    if (n.args[1].kind != Arg::Kind::Tensor || n.args[1].ref != w) return false;
    if (n.args[0].kind != Arg::Kind::Tensor || n.args[0].ref == w || g_.values[n.args[0].ref].dtype != ScalarType::Float32) return false;
    const Arg& bias = n.args[2];
    if (bias.kind == Arg::Kind::None) return true;
    return constant_arg(g_, bias, ScalarType::Float32) != nullptr;
  }

  // embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse): the last three only
  // matter for training.
  bool is_embedding_table(const Node& n, int w) const {
    if (n.op != "aten::embedding" || n.overload != "default" || n.args.size() < 2) return false;
    if (n.args[0].kind != Arg::Kind::Tensor || n.args[0].ref != w) return false;
    if (n.args[1].kind != Arg::Kind::Tensor) return false;
    const ScalarType t = g_.values[n.args[1].ref].dtype;
    return t == ScalarType::Int64 || t == ScalarType::Int32;
  }

  int add_constant(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes, const void* data,
                   size_t nbytes) {
    const int id = g_.add_constant(name, dtype, sizes, data, nbytes);
    readers_.resize(g_.values.size());  // the new value has no readers yet
    return id;
  }

  Graph& g_;
  std::vector<std::vector<int>> readers_;
};

}  // namespace

int lower_weight_only_ops(Graph& g) {
  WeightOnlyLowering l(g);
  int lowered = 0;
  const size_t count = g.nodes.size();
  for (size_t i = 0; i < count; ++i) {
    if (!g.nodes[i].erased && l.lower(static_cast<int>(i))) ++lowered;
  }
  if (lowered > 0) g.compact();
  return lowered;
}

}  // namespace exporter
}  // namespace ember
