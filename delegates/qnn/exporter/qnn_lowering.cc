#include "delegates/qnn/exporter/qnn_lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ember {
namespace qnn {

using exporter::Arg;
using exporter::Graph;
using exporter::Node;
using exporter::Value;
using exporter::ValueRole;
using exporter::ValueType;

namespace {

bool full_range(ScalarType t, int64_t qmin, int64_t qmax) {
  int64_t lo = 0, hi = -1;
  return grid_limits(t, &lo, &hi) && qmin == lo && qmax == hi;
}

// The dtype argument of quantize/dequantize nodes (an ember::ScalarType after import).
bool torch_dtype(int64_t code, ScalarType* t) {
  if (code == int64_t(ScalarType::Int8)) *t = ScalarType::Int8;
  else if (code == int64_t(ScalarType::UInt8)) *t = ScalarType::UInt8;
  else if (code == int64_t(ScalarType::Int16)) *t = ScalarType::Int16;  // a16w8 activations
  else return false;
  return true;
}

DataType qnn_type(ScalarType t) {
  switch (t) {
    case ScalarType::Int8: return kSfixed8;
    case ScalarType::UInt8: return kUfixed8;
    case ScalarType::Int16: return kSfixed16;
    case ScalarType::Float32: return kFloat32;
    case ScalarType::Int32: return kInt32;
    default: return kDataTypeUndefined;
  }
}

}  // namespace

bool grid_limits(ScalarType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case ScalarType::Int8: *lo = -128, *hi = 127; return true;
    case ScalarType::UInt8: *lo = 0, *hi = 255; return true;
    case ScalarType::Int16: *lo = -32768, *hi = 32767; return true;
    default: return false;
  }
}

std::vector<int64_t> int_list(const Node& n, size_t i, size_t count, int64_t dflt) {
  std::vector<int64_t> v;
  if (i < n.args.size() && (n.args[i].kind == Arg::Kind::Ints || n.args[i].kind == Arg::Kind::SymInts)) {
    for (int r : n.args[i].refs) {
      if (r >= 0) return {};  // symbolic: not static
    }
    v = n.args[i].ints;
  }
  if (i < n.args.size() && n.args[i].kind == Arg::Kind::Int) v = {n.args[i].i};
  if (v.empty()) v.assign(count, dflt);
  if (v.size() == 1) v.assign(count, v[0]);
  return v;
}

double number_arg(const Node& n, size_t i, double dflt) {
  if (i >= n.args.size()) return dflt;
  if (n.args[i].kind == Arg::Kind::Double) return n.args[i].d;
  if (n.args[i].kind == Arg::Kind::Int) return static_cast<double>(n.args[i].i);
  return dflt;
}

bool bool_arg(const Node& n, size_t i, bool dflt) {
  if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Bool) return dflt;
  return n.args[i].b;
}

QRep qdq_params(const Node& n) {
  QRep r;
  if (n.args.size() < 6 || n.args[2].kind != Arg::Kind::Int || n.args[3].kind != Arg::Kind::Int ||
      n.args[4].kind != Arg::Kind::Int || n.args[5].kind != Arg::Kind::Int) {
    return r;
  }
  if (n.args[1].kind != Arg::Kind::Double && n.args[1].kind != Arg::Kind::Int) return r;
  ScalarType t;
  if (!torch_dtype(n.args[5].i, &t) || !full_range(t, n.args[3].i, n.args[4].i)) return r;
  const double s = number_arg(n, 1, 0);
  const float f = static_cast<float>(s);
  if (!(std::isfinite(f) && f > 0 && std::isfinite(1.0f / f))) return r;
  r.valid = true;
  r.scale = s;
  r.zero_point = n.args[2].i;
  r.dtype = t;
  return r;
}

const char* clamp_op(const QRep& r, double* lo, double* hi) {
  if (!r.valid) return "ReluMinMax";
  int64_t tmin = 0, tmax = 0;
  grid_limits(r.dtype, &tmin, &tmax);
  const double bottom = double(tmin - r.zero_point) * r.scale, top = double(tmax - r.zero_point) * r.scale;
  *lo = std::max(*lo, bottom);
  *hi = std::min(*hi, top);
  if (*lo <= bottom && *hi >= top) return nullptr;
  if (*lo == 0 && *hi >= top) return "Relu";
  return "ReluMinMax";
}

bool keeps_quantization_grid(const std::string& k) {
  static const std::set<std::string> ops = {
      "aten::max_pool2d.default", "aten::relu.default", "aten::relu_.default", "aten::hardtanh.default",
      "aten::relu6.default", "aten::flatten.using_ints", "aten::view.default", "aten::reshape.default",
      "aten::_unsafe_view.default", "aten::permute.default", "aten::squeeze.dim", "aten::squeeze.dims",
      "aten::unsqueeze.default", "aten::clone.default", "aten::contiguous.default", "aten::transpose.int",
      "aten::pad.default", "aten::constant_pad_nd.default", "aten::upsample_nearest2d.vec",
      "aten::upsample_nearest2d.default",
  };
  return ops.count(k) != 0;
}

QuantAnalysis::QuantAnalysis(const Graph& g) : reps_(g.values.size()), readers_(g.value_readers()) {
  // Forward: integer tensors and the outputs of quantize / dequantize / integer layers carry
  // their parameters; a float op's output takes the grid of a quantize node that reads it
  // (calibrated on this very value), or its input's when the op keeps the grid.
  auto forward = [&] {
    for (const Node& n : g.nodes) {
      if (n.erased || n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) continue;
      const int out = n.outputs[0].ref;
      QRep& r = reps_[static_cast<size_t>(out)];
      if (r.valid) continue;
      const std::string k = n.kernel_name();
      if (k == kQuantizeOp) {
        r = qdq_params(n);
        if (r.valid && g.values[out].dtype != r.dtype) r.valid = false;
      } else if (k == kDequantizeOp) {
        r = qdq_params(n);
        const int in = n.args.empty() || n.args[0].kind != Arg::Kind::Tensor ? -1 : n.args[0].ref;
        if (in < 0 || g.values[in].dtype != r.dtype) r.valid = false;
        // A quantized constant (a float op's weight) is on the grid its dequantize names.
        if (r.valid && g.values[in].role == ValueRole::Constant && !reps_[static_cast<size_t>(in)].valid) {
          reps_[static_cast<size_t>(in)] = r;
        }
      } else if (k == kQuantizedConvOp || k == kQuantizedLinearOp) {
        const size_t o = k == kQuantizedConvOp ? 10 : 6;
        const ScalarType t = g.values[out].dtype;
        if (n.args.size() == o + 4 && n.args[o + 1].kind == Arg::Kind::Int &&
            (t == ScalarType::Int8 || t == ScalarType::UInt8 || t == ScalarType::Int16)) {
          r.valid = true;
          r.scale = number_arg(n, o, 0);
          r.zero_point = n.args[o + 1].i;
          r.dtype = t;
        }
      } else if (g.values[out].dtype == ScalarType::Float32) {
        for (int reader : readers_[static_cast<size_t>(out)]) {
          if (reader >= 0 && g.nodes[reader].kernel_name() == kQuantizeOp) {
            r = qdq_params(g.nodes[reader]);
            if (r.valid) break;
          }
        }
        if (!r.valid && keeps_quantization_grid(k) && !n.args.empty() && n.args[0].kind == Arg::Kind::Tensor) {
          r = reps_[static_cast<size_t>(n.args[0].ref)];
        }
      }
    }
  };
  // Backward: a float value read only by grid-keeping ops (avg pool -> flatten -> quantize,
  // add -> relu) takes their output's grid.
  auto backward = [&] {
    for (size_t i = g.nodes.size(); i-- > 0;) {
      const Node& n = g.nodes[i];
      if (n.erased || n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) continue;
      const int out = n.outputs[0].ref;
      if (reps_[static_cast<size_t>(out)].valid || g.values[out].dtype != ScalarType::Float32) continue;
      const std::string k = n.kernel_name();
      if (k == kQuantizeOp || k == kDequantizeOp || k == kQuantizedConvOp || k == kQuantizedLinearOp) continue;
      QRep r;
      bool agree = !readers_[static_cast<size_t>(out)].empty();
      for (int reader : readers_[static_cast<size_t>(out)]) {
        const Node* rn = reader >= 0 ? &g.nodes[reader] : nullptr;
        if (rn == nullptr || !keeps_quantization_grid(rn->kernel_name()) || rn->outputs.size() != 1 ||
            rn->outputs[0].kind != Arg::Kind::Tensor) {
          agree = false;
          break;
        }
        const QRep& q = reps_[static_cast<size_t>(rn->outputs[0].ref)];
        if (!q.valid || (r.valid && !(q == r))) {
          agree = false;
          break;
        }
        r = q;
      }
      if (agree) reps_[static_cast<size_t>(out)] = r;
    }
  };
  forward();
  backward();
  forward();
}

int QnnLowering::arg_value(const Node& n, size_t i) const {
  if (i >= n.args.size() || n.args[i].kind != Arg::Kind::Tensor) return -1;
  return n.args[i].ref;
}
const Value* QnnLowering::arg(const Node& n, size_t i) const {
  const int v = arg_value(n, i);
  return v < 0 ? nullptr : &g.values[static_cast<size_t>(v)];
}
int QnnLowering::out_value(const Node& n) const {
  if (n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) return -1;
  return n.outputs[0].ref;
}

namespace {

// The tensor values argument `a` reads (-1 entries: absent optional tensors).
std::vector<int> tensor_refs(const Arg& a) {
  if (a.kind == Arg::Kind::Tensor) return {a.ref};
  if (a.kind == Arg::Kind::Tensors) return a.refs;
  return {};
}

}  // namespace

std::string check_quantized_float_op(const QnnLowering& ctx, const Node& n) {
  const int out = ctx.out_value(n);
  if (out < 0) return "not a single-tensor op";
  if (ctx.g.values[out].is_dynamic()) return "dynamic shape";
  if (ctx.float_graph) {
    if (ctx.g.values[out].dtype != ScalarType::Float32) return "fp16 graph: output is not float32";
  } else if (!ctx.quant.rep(out).valid) {
    return "float output not quantized (no quantize node reads it)";
  }
  for (const Arg& a : n.args) {
    for (int v : tensor_refs(a)) {
      if (v < 0) continue;
      if (ctx.float_graph) {
        if (ctx.g.values[v].dtype != ScalarType::Float32 || ctx.g.values[v].is_dynamic()) {
          return "fp16 graph: an input is not a static float32 tensor";
        }
        continue;
      }
      if (ctx.g.values[v].role == ValueRole::Constant) return "float constant operand";
      if (!ctx.quant.rep(v).valid) return "float input not dequantized from int8";
    }
  }
  return "";
}

std::vector<uint32_t> QnnLowering::dims(int v, Layout layout) const {
  const std::vector<int64_t>& s = g.values[static_cast<size_t>(v)].sizes;
  std::vector<uint32_t> d(s.begin(), s.end());
  if (layout == Layout::Nhwc && d.size() == 4) d = {d[0], d[2], d[3], d[1]};
  return d;
}

TensorSpec QnnLowering::spec_for(int v, Layout layout, bool float_spec) const {
  const Value& value = g.values[static_cast<size_t>(v)];
  const QRep& r = quant.rep(v);
  TensorSpec s;
  s.name = value.name.empty() ? "v" + std::to_string(v) : value.name;
  for (char& c : s.name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  s.dims = dims(v, layout);
  if (r.valid && !float_spec) {
    s.data_type = qnn_type(r.dtype);
    s.quant.scale = static_cast<float>(r.scale);
    s.quant.offset = static_cast<int32_t>(-r.zero_point);
  } else {
    s.data_type = qnn_type(float_spec ? ScalarType::Float32 : value.dtype);
  }
  return s;
}

Layout QnnLowering::current_layout(int v) const {
  auto it = tensors_.find(v);
  if (it != tensors_.end() && it->second.ember < 0 && it->second.nhwc >= 0) return Layout::Nhwc;
  return Layout::Ember;
}

void QnnLowering::set_boundary(const std::vector<int>& call_inputs, const std::vector<int>& call_outputs) {
  call_inputs_ = std::set<int>(call_inputs.begin(), call_inputs.end());
  call_outputs_ = call_outputs;
  // Graph inputs in call order, in Ember's layout and dtype.
  for (int v : call_inputs) {
    const Value& value = g.values[static_cast<size_t>(v)];
    const bool is_float = value.dtype == ScalarType::Float32;
    TensorSpec s = spec_for(v, Layout::Ember, is_float);
    s.type = kAppWrite;
    const int t = b->add_tensor(std::move(s));
    io_inputs.push_back(t);
    if (is_float && quant.rep(v).valid) {
      tensors_[v].float_in = t;  // quantized on first use
    } else {
      tensors_[v].ember = t;
    }
  }
}

int QnnLowering::input(int v, Layout layout) {
  if (v < 0) {
    b->fail("qnn: missing tensor argument");
    return -1;
  }
  Tensors& t = tensors_[v];
  const Value& value = g.values[static_cast<size_t>(v)];
  if (t.ember < 0 && t.nhwc < 0) {
    if (t.float_in >= 0) {
      // A float graph input on a quantization grid: quantize it inside the graph.
      const int q = b->add_tensor(spec_for(v, Layout::Ember, false));
      b->add_node("Quantize", {t.float_in}, {q});
      t.ember = q;
    } else if (value.role == ValueRole::Constant && value.constant >= 0) {
      TensorSpec s = spec_for(v, Layout::Ember, false);
      s.type = kStatic;
      s.data = g.constants[static_cast<size_t>(value.constant)].data;
      if (value.dtype != ScalarType::Float32 && !quant.rep(v).valid) {
        b->fail("qnn: constant " + value.name + " has no quantization");
        return -1;
      }
      t.ember = b->add_tensor(std::move(s));
    } else {
      b->fail("qnn: value " + value.name + " is read before it is produced in the partition");
      return -1;
    }
  }
  int& want = layout == Layout::Ember ? t.ember : t.nhwc;
  if (want >= 0) return want;
  const int have = layout == Layout::Ember ? t.nhwc : t.ember;
  if (value.sizes.size() != 4) {
    want = have;  // the layouts coincide below rank 4
    return want;
  }
  const int moved = b->add_tensor(spec_for(v, layout, quant.rep(v).valid ? false : value.dtype == ScalarType::Float32));
  // NCHW -> NHWC: perm {0, 2, 3, 1}; NHWC -> NCHW: {0, 3, 1, 2}.
  std::vector<uint32_t> perm = layout == Layout::Nhwc ? std::vector<uint32_t>{0, 2, 3, 1}
                                                      : std::vector<uint32_t>{0, 3, 1, 2};
  b->add_node("Transpose", {have}, {moved}, {tensor_u32("perm", perm)});
  want = moved;
  return want;
}

int QnnLowering::output(int v, Layout layout, bool float_out) {
  const int t = b->add_tensor(spec_for(v, layout, float_out));
  Tensors& ts = tensors_[v];
  (layout == Layout::Ember ? ts.ember : ts.nhwc) = t;
  if (g.values[static_cast<size_t>(v)].sizes.size() != 4) ts.ember = ts.nhwc = t;
  return t;
}

void QnnLowering::alias(int v, int from) {
  Tensors& src = tensors_[from];
  if (src.ember < 0 && src.nhwc < 0) input(from, Layout::Ember);
  tensors_[v] = tensors_[from];
  tensors_[v].float_in = -1;
}

std::string QnnLowering::finish_outputs() {
  for (int v : call_outputs_) {
    const Value& value = g.values[static_cast<size_t>(v)];
    const QRep& r = quant.rep(v);
    const int src = input(v, Layout::Ember);
    if (src < 0) return b->error();
    const bool to_float = value.dtype == ScalarType::Float32 && r.valid;
    if (value.dtype == ScalarType::Float32 && !r.valid && !float_graph) {
      return "float output " + value.name + " has no quantization";
    }
    TensorSpec s = spec_for(v, Layout::Ember, to_float);
    s.type = kAppRead;
    const int out = b->add_tensor(std::move(s));
    if (to_float) {
      b->add_node("Dequantize", {src}, {out});
    } else {
      b->add_node("Reshape", {src}, {out});
    }
    io_outputs.push_back(out);
  }
  return b->ok() ? "" : b->error();
}

const QnnOpTable& qnn_op_table() {
  static const QnnOpTable* table = [] {
    auto* t = new QnnOpTable("qnn");
    add_quantize_ops(*t);
    add_layer_ops(*t);
    add_pooling_ops(*t);
    add_elementwise_ops(*t);
    add_shape_ops(*t);
    add_matmul_ops(*t);
    add_normalization_ops(*t);
    add_resize_pad_ops(*t);
    return t;
  }();
  return *table;
}

}  // namespace qnn
}  // namespace ember
