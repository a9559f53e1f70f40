#include "exporter/quantize/quantizer.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "exporter/ops/op_schemas.h"
#include "exporter/passes/passes.h"
#include "exporter/quantize/graph_interpreter.h"
#include "runtime/core/float16.h"

namespace ember {
namespace exporter {
namespace {

// Activation grids, asymmetric: int8, or int16 for A16W8.
struct ActivationType {
  ScalarType dtype;
  int64_t min, max;
};
constexpr ActivationType kInt8Activations{ScalarType::Int8, -128, 127};
constexpr ActivationType kInt16Activations{ScalarType::Int16, -32768, 32767};
constexpr int64_t kWeightMax = 127;                  // int8 weights, symmetric [-127, 127]
constexpr int64_t kInt4Min = -8, kInt4Max = 7;       // int4 weights (symmetric scale: max|w| / 7)
constexpr double kMinScale = 1.1920928955078125e-07;  // float32 epsilon, as PyTorch's observers
constexpr int kHistogramBins = 2048;
constexpr size_t kErrorSamples = 8;   // calibration samples the per-layer error is measured on
constexpr size_t kBiasCorrectionSamples = 64;  // samples the input means and the kept-or-not test use

// A layer the quantizer may rewrite.
struct Layer {
  int node = -1;
  int weight_arg = 1;  // index of the weight argument (0 for embedding)
  int input = -1;      // activation read (Int8)
  int output = -1;     // value written: the fused relu's output when a relu follows
  bool relu = false;
};

const char* layer_op(const Node& n) {
  if (n.overload != "default") return nullptr;
  if (n.op == "aten::conv2d" || n.op == "aten::linear" || n.op == "aten::embedding") return n.op.c_str();
  if (n.op == "aten::convolution" && n.args.size() == 9 && n.args[6].kind == Arg::Kind::Bool && !n.args[6].b) {
    return n.op.c_str();
  }
  return nullptr;
}

bool is_float_constant(const Graph& g, const Arg& a) {
  if (a.kind != Arg::Kind::Tensor) return false;
  const Value& v = g.values[a.ref];
  return v.role == ValueRole::Constant && v.constant >= 0 && v.dtype == ScalarType::Float32 &&
         g.constants[v.constant].data.size() >= v.nbytes();
}

std::vector<float> floats_of(const Graph& g, int value) {
  const Constant& c = g.constants[g.values[value].constant];
  std::vector<float> f(static_cast<size_t>(g.values[value].numel()));
  if (!f.empty()) std::memcpy(f.data(), c.data.data(), f.size() * sizeof(float));
  return f;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  std::vector<uint64_t> histogram;  // percentile observer, over [lo, hi] of the first pass
  void add(const float* p, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i])) continue;
      lo = std::min(lo, static_cast<double>(p[i]));
      hi = std::max(hi, static_cast<double>(p[i]));
    }
  }
  void add_to_histogram(const float* p, int64_t n) {
    if (histogram.empty()) histogram.assign(kHistogramBins, 0);
    const double width = (hi - lo) / kHistogramBins;
    for (int64_t i = 0; i < n; ++i) {
      if (!std::isfinite(p[i]) || width <= 0) continue;
      int64_t b = static_cast<int64_t>((p[i] - lo) / width);
      histogram[static_cast<size_t>(std::min<int64_t>(std::max<int64_t>(b, 0), kHistogramBins - 1))]++;
    }
  }
  // Clips each tail to `percent` of the values.
  void clip_to_percentile(double percent) {
    uint64_t total = 0;
    for (uint64_t c : histogram) total += c;
    if (total == 0 || hi <= lo) return;
    const double width = (hi - lo) / kHistogramBins;
    const double tail = static_cast<double>(total) * (100.0 - percent) / 100.0;
    double seen = 0;
    int first = 0, last = kHistogramBins - 1;
    for (; first < kHistogramBins - 1; ++first) {
      seen += static_cast<double>(histogram[first]);
      if (seen > tail) break;
    }
    seen = 0;
    for (; last > first; --last) {
      seen += static_cast<double>(histogram[last]);
      if (seen > tail) break;
    }
    const double new_lo = lo + first * width, new_hi = lo + (last + 1) * width;
    lo = new_lo;
    hi = new_hi;
  }
};

// PyTorch's affine parameters on grid `t` for [lo, hi] (the range always includes 0).
void activation_params(const Range& r, const ActivationType& t, double* scale, int64_t* zero_point) {
  const double lo = std::min(0.0, std::isfinite(r.lo) ? r.lo : 0.0);
  const double hi = std::max(0.0, std::isfinite(r.hi) ? r.hi : 0.0);
  *scale = std::max((hi - lo) / static_cast<double>(t.max - t.min), kMinScale);
  *zero_point = std::min(t.max, std::max(t.min, t.min - static_cast<int64_t>(std::nearbyint(lo / *scale))));
}

// Ops between layers whose output is a new float activation, quantized with all_activations.
// (Max pooling, reshapes and the like keep their input's grid and need none.)
bool makes_new_activation(const Node& n) {
  static const std::set<std::string> ops = {
      "aten::add.Tensor", "aten::sub.Tensor", "aten::mul.Tensor", "aten::cat.default",
      "aten::avg_pool2d.default", "aten::adaptive_avg_pool2d.default", "aten::mean.dim",
      "aten::relu.default", "aten::hardtanh.default", "aten::relu6.default", "aten::hardswish.default",
      "aten::sigmoid.default", "aten::tanh.default", "aten::gelu.default", "aten::silu.default",
  };
  return ops.count(n.kernel_name()) != 0;
}

bool matches_skip(const Node& n, const std::vector<std::string>& skip) {
  for (const std::string& s : skip) {
    if (!s.empty() && (n.name.find(s) != std::string::npos || n.source.find(s) != std::string::npos)) return true;
  }
  return false;
}

// Symmetric quantization of consecutive groups of `group` values (a weight's output channel,
// or a run of one row): scale = max|x| / qmax per group, q = clamp(round_half_even(x *
// float(1 / scale)), qmin, qmax), as quantize_per_channel computes it. Returns the relative
// L2 error of the dequantized values. `bf16_scales`: each scale rounded up to the next
// bfloat16 number (XNNPACK's block-wise int4 kernels take bfloat16 scales: with these the
// delegate uses exactly the scales the portable kernel does; rounding up keeps every value
// in range).
float round_up_to_bf16(float s) {
  uint32_t bits = float_to_bits(s);
  if ((bits & 0xffffu) != 0) bits = (bits & 0xffff0000u) + 0x10000u;  // positive finite scales only
  return bits_to_float(bits);
}

double quantize_symmetric_groups(const std::vector<float>& f, int64_t group, int64_t qmin, int64_t qmax,
                                 std::vector<int8_t>* q, std::vector<float>* scales, bool bf16_scales = false) {
  const int64_t groups = group > 0 ? static_cast<int64_t>(f.size()) / group : 0;
  q->assign(f.size(), 0);
  scales->assign(static_cast<size_t>(groups), 0.0f);
  double err = 0, norm = 0;
  for (int64_t gi = 0; gi < groups; ++gi) {
    const int64_t base = gi * group;
    float m = 0;
    for (int64_t j = 0; j < group; ++j) m = std::max(m, std::fabs(f[base + j]));
    float sc = static_cast<float>(std::max(static_cast<double>(m) / static_cast<double>(qmax), kMinScale));
    if (bf16_scales) sc = round_up_to_bf16(sc);
    (*scales)[gi] = sc;
    const float inv = static_cast<float>(1.0 / sc);
    for (int64_t j = 0; j < group; ++j) {
      const float x = f[base + j];
      const float v = std::min(static_cast<float>(qmax), std::max(static_cast<float>(qmin), std::nearbyint(x * inv)));
      (*q)[base + j] = static_cast<int8_t>(v);
      const double d = static_cast<double>(v) * sc - x;
      err += d * d;
      norm += static_cast<double>(x) * x;
    }
  }
  return norm > 0 ? std::sqrt(err / norm) : 0.0;
}

class Rewriter {
 public:
  explicit Rewriter(Graph& g, const ActivationType& activations = kInt8Activations)
      : g_(g), activations_(activations) {}

  int add_value(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes) {
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.sizes = sizes;
    v.dynamic_dims.assign(sizes.size(), false);
    return g_.add_value(std::move(v));
  }

  // A quantized_decomposed:: node (schema from the generated table) writing `out`.
  Node node(const std::string& op, std::vector<Arg> args, int out, const Node& origin) {
    Node n;
    n.op = op;
    n.overload = "default";
    n.schema = find_op_schema(n.op, n.overload);
    n.source = origin.source;
    n.name = origin.name;
    if (n.schema != nullptr) {
      for (size_t i = 0; i < n.schema->args.size(); ++i) {
        n.arg_names.push_back(n.schema->args[i].name);
        if (i >= args.size()) args.push_back(n.schema->args[i].has_default ? n.schema->args[i].default_value : Arg::none());
      }
    }
    n.args = std::move(args);
    n.outputs.push_back(Arg::tensor(out));
    return n;
  }

  // Every read of `from` by the graph's live nodes, outputs and write-backs reads `to` instead.
  void redirect_reads(int from, int to) {
    for (Node& n : g_.nodes) {
      if (n.erased) continue;
      for (Arg& a : n.args) {
        if (a.ref == from && (a.kind == Arg::Kind::Tensor)) a.ref = to;
        if (a.kind == Arg::Kind::Tensors || a.kind == Arg::Kind::OptionalTensors) {
          for (int& r : a.refs) r = r == from ? to : r;
        }
      }
    }
    for (GraphOutput& o : g_.outputs) o.value = o.value == from ? to : o.value;
    for (WriteBack& w : g_.write_backs) w.from = w.from == from ? to : w.from;
  }

  // The dequantized twin of float activation `v` (quantize -> dequantize with `v`'s range),
  // placed right after `v`'s producer; every other read of `v` moves to it. Idempotent.
  int fake_quantize(int v, const Range& range, const Node& origin) {
    if (dequantized_.count(v)) return v;
    auto it = twin_.find(v);
    if (it != twin_.end()) return it->second;
    double scale = 0;
    int64_t zp = 0;
    activation_params(range, activations_, &scale, &zp);
    const Value val = g_.values[v];
    const int q = add_value(val.name + "_q", activations_.dtype, val.sizes);
    const int dq = add_value(val.name + "_dq", ScalarType::Float32, val.sizes);
    redirect_reads(v, dq);
    const std::vector<Arg> params = {Arg::real(scale), Arg::integer(zp), Arg::integer(activations_.min),
                                     Arg::integer(activations_.max),
                                     Arg::integer(static_cast<int64_t>(activations_.dtype))};
    std::vector<Arg> qa = {Arg::tensor(v)};
    qa.insert(qa.end(), params.begin(), params.end());
    std::vector<Arg> da = {Arg::tensor(q)};
    da.insert(da.end(), params.begin(), params.end());
    std::vector<Node>& where = val.producer >= 0 ? after_[val.producer] : front_;
    where.push_back(node("quantized_decomposed::quantize_per_tensor", std::move(qa), q, origin));
    where.push_back(node("quantized_decomposed::dequantize_per_tensor", std::move(da), dq, origin));
    twin_[v] = dq;
    dequantized_.insert(dq);
    return dq;
  }

  // Replaces the float weight of `layer` with dequantize_per_channel(int8 constant) placed
  // before it; returns the weight's relative L2 error and sets the byte counts.
  double quantize_weight(Node& layer, int arg, LayerQuantization* report,
                         std::vector<float>* weight_error = nullptr) {
    const int w = layer.args[arg].ref;
    const Value wv = g_.values[w];
    const int64_t channels = wv.sizes[0];
    std::vector<int8_t> q;
    std::vector<float> scales;
    const double error = quantize_symmetric_groups(floats_of(g_, w), channels > 0 ? wv.numel() / channels : 1,
                                                   -kWeightMax, kWeightMax, &q, &scales);
    if (weight_error != nullptr) {  // W - dequantize(W_q), for bias correction
      const std::vector<float> f = floats_of(g_, w);
      const int64_t per = channels > 0 ? wv.numel() / channels : 1;
      weight_error->resize(f.size());
      for (size_t i = 0; i < f.size(); ++i) {
        (*weight_error)[i] = f[i] - static_cast<float>(q[i]) * scales[i / static_cast<size_t>(per)];
      }
    }
    std::vector<int64_t> zeros(static_cast<size_t>(channels), 0);
    const int qc = g_.add_constant(wv.name + "_int8", ScalarType::Int8, wv.sizes, q.data(), q.size());
    const int sc = g_.add_constant(wv.name + "_scales", ScalarType::Float32, {channels}, scales.data(), scales.size() * 4);
    const int zc = g_.add_constant(wv.name + "_zero_points", ScalarType::Int64, {channels}, zeros.data(), zeros.size() * 8);
    replace_weight(layer, arg, "quantized_decomposed::dequantize_per_channel",
                   {Arg::tensor(qc), Arg::tensor(sc), Arg::tensor(zc), Arg::integer(0), Arg::integer(-kWeightMax),
                    Arg::integer(kWeightMax), Arg::integer(static_cast<int64_t>(ScalarType::Int8))});
    report->float_weight_bytes = wv.nbytes();
    report->quantized_weight_bytes = q.size() + scales.size() * 4;
    return error;
  }

  // Int4: replaces the float [N, K] weight with dequantize_per_channel_group(int4 values in
  // int8 bytes, scales [N, K / group]); returns the weight's relative L2 error.
  double quantize_weight_grouped(Node& layer, int arg, int64_t group, LayerQuantization* report) {
    const int w = layer.args[arg].ref;
    const Value wv = g_.values[w];
    const int64_t rows = wv.sizes[0], k = wv.sizes[1];
    std::vector<int8_t> q;
    std::vector<float> scales;
    const double error =
        quantize_symmetric_groups(floats_of(g_, w), group, kInt4Min, kInt4Max, &q, &scales, /*bf16_scales=*/true);
    const int qc = g_.add_constant(wv.name + "_int4", ScalarType::Int8, wv.sizes, q.data(), q.size());
    const int sc = g_.add_constant(wv.name + "_group_scales", ScalarType::Float32, {rows, k / group}, scales.data(),
                                scales.size() * 4);
    replace_weight(layer, arg, "quantized_decomposed::dequantize_per_channel_group",
                   {Arg::tensor(qc), Arg::tensor(sc), Arg::none(), Arg::integer(kInt4Min), Arg::integer(kInt4Max),
                    Arg::integer(static_cast<int64_t>(ScalarType::Int8)), Arg::integer(group),
                    Arg::integer(static_cast<int64_t>(ScalarType::Float32))});
    report->float_weight_bytes = wv.nbytes();
    report->quantized_weight_bytes = q.size() + scales.size() * 4;
    return error;
  }

  // The layer's weight argument becomes the output of `dequantize_op(args)`, placed before it.
  void replace_weight(Node& layer, int arg, const std::string& dequantize_op, std::vector<Arg> args) {
    const Value wv = g_.values[layer.args[arg].ref];
    const int dq = add_value(wv.name + "_dq", ScalarType::Float32, wv.sizes);
    before_[&layer - g_.nodes.data()].push_back(node(dequantize_op, std::move(args), dq, layer));
    layer.args[arg] = Arg::tensor(dq);
  }

  // Splices the new nodes into the graph's order.
  void commit() {
    std::vector<Node> nodes = std::move(front_);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      auto b = before_.find(static_cast<int>(i));
      if (b != before_.end()) for (Node& n : b->second) nodes.push_back(std::move(n));
      nodes.push_back(std::move(g_.nodes[i]));
      auto a = after_.find(static_cast<int>(i));
      if (a != after_.end()) for (Node& n : a->second) nodes.push_back(std::move(n));
    }
    g_.nodes = std::move(nodes);
    g_.compact();
  }

  int twin(int v) const {
    auto it = twin_.find(v);
    return it == twin_.end() ? -1 : it->second;
  }

 private:
  Graph& g_;
  ActivationType activations_;
  std::vector<Node> front_;
  std::map<int, std::vector<Node>> before_, after_;
  std::map<int, int> twin_;      // float value -> its dequantized twin
  std::set<int> dequantized_;    // the twins
};

// Which candidate layers to quantize; reports the others with a reason.
// Rows of `report->layers` with an empty why_not correspond, in order, to the layers returned.
std::vector<Layer> find_layers(const Graph& g, const QuantizeOptions& o, QuantizeReport* report) {
  std::vector<int> readers(g.values.size(), 0);
  std::vector<int> reader_node(g.values.size(), -1);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].erased) continue;
    for (const Arg& a : g.nodes[i].args) {
      for (int r : a.value_refs()) {
        readers[r]++;
        reader_node[r] = static_cast<int>(i);
      }
    }
  }
  for (const GraphOutput& out : g.outputs) if (out.value >= 0) readers[out.value] += 2;  // never fused away
  std::vector<Layer> layers;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const char* op = n.erased ? nullptr : layer_op(n);
    if (op == nullptr) continue;
    const bool embedding = n.op == "aten::embedding";
    if (embedding && quantizes_activations(o.mode)) continue;  // static: conv and linear
    LayerQuantization r;
    r.node = n.name;
    r.op = n.op;
    r.source = n.source;
    Layer l;
    l.node = static_cast<int>(i);
    l.weight_arg = embedding ? 0 : 1;
    const size_t w_rank = n.op == "aten::linear" || embedding ? 2 : 4;
    if (matches_skip(n, o.skip)) {
      r.why_not = "skipped (--quantize-skip)";
    } else if (o.mode == QuantizeMode::Int4Weight && n.op != "aten::linear" && !embedding) {
      r.why_not = "int4-weight covers linear and embedding layers";
    } else if (n.args.size() < 2 || !is_float_constant(g, n.args[l.weight_arg]) ||
               g.values[n.args[l.weight_arg].ref].sizes.size() != w_rank) {
      r.why_not = "the weight is not a float32 constant of the expected rank";
    } else if (!embedding && n.args.size() > 2 && n.args[2].kind != Arg::Kind::None && !is_float_constant(g, n.args[2])) {
      r.why_not = "the bias is not a float32 constant";
    } else if (!embedding && (n.args[0].kind != Arg::Kind::Tensor || g.values[n.args[0].ref].dtype != ScalarType::Float32 ||
                              g.values[n.args[0].ref].role == ValueRole::Constant)) {
      r.why_not = "the input is not a float32 activation";
    } else if (n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) {
      r.why_not = "unexpected outputs";
    }
    report->layers.push_back(r);
    if (!r.why_not.empty()) continue;
    l.input = n.args[0].ref;
    l.output = n.outputs[0].ref;
    const int next = readers[l.output] == 1 ? reader_node[l.output] : -1;
    double lo = 0, hi = 0;
    if (next >= 0 && fusable_activation(g.nodes[next], &lo, &hi) && g.nodes[next].outputs.size() == 1 &&
        g.nodes[next].outputs[0].kind == Arg::Kind::Tensor) {
      l.relu = true;
      l.output = g.nodes[next].outputs[0].ref;
    }
    layers.push_back(l);
  }
  return layers;
}

// Calibration: ranges of every value in `tracked` over the samples.
absl::Status calibrate(Graph& g, const QuantizeOptions& o, const std::set<int>& tracked, std::map<int, Range>* ranges) {
  GraphInterpreter interp(g);
  for (int pass = 0; pass < (o.observer == RangeObserver::Percentile ? 2 : 1); ++pass) {
    for (size_t s = 0; s < o.calibration.size(); ++s) {
      const std::vector<NpyArray>& sample = o.calibration[s];
      auto observe = [&](int id, const float* p, int64_t n) {
        if (!tracked.count(id)) return;
        if (pass == 0) (*ranges)[id].add(p, n);
        else (*ranges)[id].add_to_histogram(p, n);
      };
      for (size_t i = 0; i < sample.size() && i < g.inputs.size(); ++i) {
        if (sample[i].dtype == ScalarType::Float32) {
          observe(g.inputs[i], sample[i].as<float>(), sample[i].numel());
        }
      }
      absl::Status st = interp.run(sample, [&](int id, const Tensor& t) {
        if (t.dtype == ScalarType::Float32) observe(id, t.data_as<float>(), t.numel());
      });
      if (!st.ok()) {
        return absl::Status(st.code(), "calibration sample " + std::to_string(s) + ": " + std::string(st.message()));
      }
    }
  }
  if (o.observer == RangeObserver::Percentile) {
    for (auto& [id, r] : *ranges) r.clip_to_percentile(o.percentile);
  }
  return absl::OkStatus();
}

// A sample given as one array stacking several inputs along the first dimension ([N, ...] for
// an input [B, ...], N a multiple of B) becomes N / B samples.
std::vector<std::vector<NpyArray>> split_stacked_samples(const Graph& g, const std::vector<std::vector<NpyArray>>& in) {
  std::vector<std::vector<NpyArray>> out;
  for (const std::vector<NpyArray>& sample : in) {
    bool stacked = sample.size() == 1 && g.inputs.size() == 1;
    const Value* v = stacked ? &g.values[g.inputs[0]] : nullptr;
    stacked = stacked && !v->sizes.empty() && v->sizes[0] > 0 && sample[0].shape.size() == v->sizes.size() &&
              sample[0].dtype == v->dtype && sample[0].shape != v->sizes && sample[0].shape[0] % v->sizes[0] == 0 &&
              std::equal(v->sizes.begin() + 1, v->sizes.end(), sample[0].shape.begin() + 1);
    if (!stacked) {
      out.push_back(sample);
      continue;
    }
    const size_t chunk = v->nbytes();
    for (size_t off = 0; off + chunk <= sample[0].data.size(); off += chunk) {
      NpyArray a;
      a.dtype = v->dtype;
      a.shape = v->sizes;
      a.data.assign(sample[0].data.begin() + static_cast<std::ptrdiff_t>(off),
                    sample[0].data.begin() + static_cast<std::ptrdiff_t>(off + chunk));
      out.push_back({std::move(a)});
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<QuantizeReport> quantize_graph(Graph& g, const QuantizeOptions& options) {
  QuantizeReport report;
  QuantizeOptions o = options;
  o.calibration = split_stacked_samples(g, options.calibration);
  if (o.mode == QuantizeMode::None) return report;
  if (quantizes_activations(o.mode) && o.calibration.empty()) {
    return absl::InvalidArgumentError(
        std::string("--quantize ") + (o.mode == QuantizeMode::A16W8 ? "a16w8" : "int8") + " needs calibration data: --calibrate DIR with input_<i>.npy files (DIR itself or each "
        "subdirectory is one sample)");
  }
  if (o.percentile <= 50 || o.percentile > 100) return absl::InvalidArgumentError("the percentile must be in (50, 100]");
  // One producer per activation: in-place writes (relu_ -> relu writing its input) would make
  // a layer's output value change after its quantize node read it.
  make_activations_ssa(g);
  const std::vector<Layer> layers = find_layers(g, o, &report);
  Rewriter rw(g, o.mode == QuantizeMode::A16W8 ? kInt16Activations : kInt8Activations);

  if (o.mode == QuantizeMode::Int8Weight || o.mode == QuantizeMode::Int4Weight) {
    if (o.mode == QuantizeMode::Int4Weight && o.group_size < 1) {
      return absl::InvalidArgumentError("--group-size must be a positive integer");
    }
    size_t k = 0;
    for (size_t i = 0; i < report.layers.size(); ++i) {
      LayerQuantization& r = report.layers[i];
      if (!r.why_not.empty()) continue;
      const Layer& l = layers[k++];
      const int64_t row = g.values[g.nodes[l.node].args[l.weight_arg].ref].sizes[1];
      // A layer whose rows the group size does not divide gets int8 per channel (what
      // llama.cpp does with tensors its block size does not fit): smaller error, still 4x.
      const bool int4 = o.mode == QuantizeMode::Int4Weight && row % o.group_size == 0;
      if (o.mode == QuantizeMode::Int4Weight && !int4) {
        r.note = "int8 per channel: --group-size " + std::to_string(o.group_size) + " does not divide its " +
                 std::to_string(row) + " inputs per row";
      }
      r.rel_l2 = int4 ? rw.quantize_weight_grouped(g.nodes[l.node], l.weight_arg, o.group_size, &r)
                      : rw.quantize_weight(g.nodes[l.node], l.weight_arg, &r);
      r.bits = int4 ? 4 : 8;
      r.quantized = true;
      report.quantized++;
    }
    rw.commit();
    return report;
  }

  // Int8: calibrate the inputs and outputs of every layer (and with all_activations, the
  // outputs of the ops between layers that make new values).
  std::set<int> tracked;
  for (const Layer& l : layers) {
    tracked.insert(l.input);
    tracked.insert(l.output);
  }
  std::vector<std::pair<int, int>> between;  // node, float output value
  if (o.all_activations) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (n.erased || !makes_new_activation(n) || n.outputs.size() != 1 || n.outputs[0].kind != Arg::Kind::Tensor) continue;
      const int v = n.outputs[0].ref;
      if (g.values[v].dtype != ScalarType::Float32 || g.values[v].is_dynamic() || matches_skip(n, o.skip)) continue;
      between.push_back({static_cast<int>(i), v});
      tracked.insert(v);
    }
  }
  std::map<int, Range> ranges;
  if (absl::Status s = calibrate(g, o, tracked, &ranges); !s.ok()) return s;
  Graph float_graph = g;  // the reference for the per-layer error

  size_t k = 0;
  std::vector<std::pair<size_t, int>> measured;  // report row, float value id
  std::vector<BiasCorrectionLayer> bias_layers;
  for (size_t i = 0; i < report.layers.size(); ++i) {
    LayerQuantization& r = report.layers[i];
    if (!r.why_not.empty()) continue;
    const Layer& l = layers[k++];
    Node& n = g.nodes[l.node];
    const int in = n.args[0].ref;  // may already be an earlier layer's dequantized output
    const int dq_in = rw.fake_quantize(in, ranges[l.input], n);
    g.nodes[l.node].args[0] = Arg::tensor(dq_in);
    BiasCorrectionLayer bc;
    bc.node = g.nodes[l.node].name;
    bc.weight_sizes = g.values[g.nodes[l.node].args[1].ref].sizes;
    rw.quantize_weight(g.nodes[l.node], 1, &r, o.bias_correction ? &bc.weight_error : nullptr);
    if (o.bias_correction && g.nodes[l.node].op != "aten::embedding") bias_layers.push_back(std::move(bc));
    rw.fake_quantize(l.output, ranges[l.output], g.nodes[l.node]);
    r.quantized = true;
    report.quantized++;
    measured.push_back({i, l.output});
  }
  for (const auto& [node, v] : between) rw.fake_quantize(v, ranges[v], g.nodes[node]);  // idempotent
  rw.commit();

  if (o.bias_correction) {
    if (absl::Status st = correct_biases(g, float_graph, bias_layers, o.calibration, kBiasCorrectionSamples,
                                         &report.bias_correction);
        !st.ok()) {
      return absl::Status(st.code(), "bias correction: " + std::string(st.message()));
    }
  }

  // Per-layer error: the float graph and the fake-quantized one on the same samples.
  GraphInterpreter ref(float_graph), quant(g);
  std::vector<double> sum(report.layers.size(), 0);
  const size_t samples = std::min(o.calibration.size(), kErrorSamples);
  for (size_t s = 0; s < samples; ++s) {
    auto nothing = [](int, const Tensor&) {};
    absl::Status a = ref.run(o.calibration[s], nothing);
    if (!a.ok()) return a;
    absl::Status b = quant.run(o.calibration[s], nothing);
    if (!b.ok()) return absl::Status(b.code(), "running the quantized graph: " + std::string(b.message()));
    for (const auto& [row, value] : measured) {
      const int twin = rw.twin(value);
      if (twin >= 0) sum[row] += relative_l2_of_floats(quant.bytes(twin), ref.bytes(value));
    }
  }
  for (const auto& [row, value] : measured) report.layers[row].rel_l2 = samples > 0 ? sum[row] / samples : -1;
  return report;
}

namespace {

// input_0.npy, input_1.npy, ... of one directory; empty when it has no input_0.npy.
absl::StatusOr<std::vector<NpyArray>> read_sample_dir(const std::string& dir) {
  std::vector<NpyArray> sample;
  for (int i = 0;; ++i) {
    const std::string path = dir + "/input_" + std::to_string(i) + ".npy";
    struct stat st;
    if (stat(path.c_str(), &st) != 0) break;
    auto a = read_npy(path);
    if (!a.ok()) return a.status();
    sample.push_back(std::move(*a));
  }
  return sample;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<NpyArray>>> read_calibration_samples(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return absl::NotFoundError("calibration data " + path + " does not exist");
  std::vector<std::vector<NpyArray>> samples;
  if (!S_ISDIR(st.st_mode)) {
    auto a = read_npy(path);
    if (!a.ok()) return a.status();
    samples.push_back({std::move(*a)});
    return samples;
  }
  auto own = read_sample_dir(path);
  if (!own.ok()) return own.status();
  if (!own->empty()) samples.push_back(std::move(*own));
  std::vector<std::string> subdirs;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      const std::string sub = path + "/" + name;
      struct stat sst;
      if (name[0] != '.' && stat(sub.c_str(), &sst) == 0 && S_ISDIR(sst.st_mode)) subdirs.push_back(sub);
    }
    closedir(d);
  }
  std::sort(subdirs.begin(), subdirs.end());
  for (const std::string& sub : subdirs) {
    auto sample = read_sample_dir(sub);
    if (!sample.ok()) return sample.status();
    if (!sample->empty()) samples.push_back(std::move(*sample));
  }
  if (samples.empty()) {
    return absl::InvalidArgumentError("no calibration samples in " + path +
                                      ": expected input_0.npy (and input_1.npy, ...) in it or in its subdirectories");
  }
  return samples;
}

std::string format_quantize_report(const QuantizeReport& r, QuantizeMode mode) {
  std::ostringstream os;
  size_t before = 0, after = 0;
  for (const LayerQuantization& l : r.layers) {
    os << "  " << (!l.quantized ? "float" : l.bits == 4 ? "int4 " : "int8 ") << "  " << l.op << " " << l.node;
    if (l.quantized && l.rel_l2 >= 0) {
      os << (quantizes_activations(mode) ? "  output rel. L2 vs float " : "  weight rel. L2 ") << l.rel_l2;
    }
    if (!l.quantized) os << "  (" << l.why_not << ")";
    if (!l.note.empty()) os << "  (" << l.note << ")";
    if (!l.source.empty()) os << "  at " << l.source;
    os << "\n";
    before += l.float_weight_bytes;
    after += l.quantized_weight_bytes;
  }
  int int4 = 0;
  for (const LayerQuantization& l : r.layers) int4 += l.quantized && l.bits == 4;
  os << "quantize: " << r.quantized << " of " << r.layers.size() << " layers to ";
  if (int4 == 0) os << (mode == QuantizeMode::A16W8 ? "int8 weights, int16 activations (a16w8)" : "int8");
  else if (int4 == r.quantized) os << "int4 (one value per byte)";
  else os << "int4 (" << int4 << ", one value per byte) and int8 (" << r.quantized - int4 << ")";
  if (before > 0) os << ", their weights " << before << " -> " << after << " bytes";
  os << "\n";
  const BiasCorrectionResult& bc = r.bias_correction;
  if (bc.output_error_before >= 0) {
    os << "bias correction: " << (bc.applied ? "applied to " : "not kept for ") << bc.layers
       << " layers: output rel. L2 vs float " << bc.output_error_before << " -> " << bc.output_error_after
       << (bc.applied ? "" : " (no better: biases left as they were)") << "\n";
  }
  return os.str();
}

}  // namespace exporter
}  // namespace ember
