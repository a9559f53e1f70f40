#include "exporter/quantize/bias_correction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "exporter/quantize/graph_interpreter.h"

namespace ember {
namespace exporter {
namespace {

// The layer named `name` (the quantize / dequantize nodes the quantizer put around it carry
// its name too).
int find_layer(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!n.erased && n.name == name && (n.op == "aten::conv2d" || n.op == "aten::linear")) return static_cast<int>(i);
  }
  return -1;
}

// Per-channel sums of a layer input: conv2d NCHW (channel dim 1), linear [..., K] (last dim).
struct ChannelMean {
  std::vector<double> sum;
  double count = 0;  // values per channel
  void add(const float* x, const int64_t* sizes, int rank, bool conv) {
    if (rank < 1 || (conv && rank != 4)) return;
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[d];
    const int64_t channels = conv ? sizes[1] : sizes[rank - 1], inner = conv ? sizes[2] * sizes[3] : 1;
    if (channels <= 0 || inner <= 0) return;
    sum.resize(size_t(channels), 0.0);
    for (int64_t i = 0; i < n; ++i) sum[size_t((i / inner) % channels)] += x[i];
    count += double(n / channels);
  }
};

// Output error of output 0 of `q` vs `f` over the samples; `observe` sees q's values.
absl::Status output_error(Graph& q, Graph& f, const std::vector<std::vector<NpyArray>>& samples, size_t count,
                          const GraphInterpreter::Observer& observe, double* error) {
  GraphInterpreter qi(q), fi(f);
  double sum = 0;
  for (size_t s = 0; s < count; ++s) {
    auto nothing = [](int, const Tensor&) {};
    absl::Status a = fi.run(samples[s], nothing);
    if (!a.ok()) return a;
    absl::Status b = qi.run(samples[s], observe);
    if (!b.ok()) return b;
    sum += relative_l2_of_floats(qi.bytes(q.outputs[0].value), fi.bytes(f.outputs[0].value));
  }
  *error = count > 0 ? sum / double(count) : -1;
  return absl::OkStatus();
}

}  // namespace

absl::Status correct_biases(Graph& quantized, Graph& float_graph, const std::vector<BiasCorrectionLayer>& layers,
                            const std::vector<std::vector<NpyArray>>& samples, size_t max_samples,
                            BiasCorrectionResult* result) {
  *result = BiasCorrectionResult();
  const size_t count = std::min(samples.size(), max_samples);
  if (count == 0 || quantized.outputs.empty() || float_graph.outputs.empty() || quantized.outputs[0].value < 0 ||
      float_graph.outputs[0].value < 0 || quantized.values[quantized.outputs[0].value].dtype != ScalarType::Float32) {
    return absl::OkStatus();  // nothing to measure the effect on: leave the graph as it is
  }
  // The input value of each layer in the quantized graph.
  std::map<int, std::pair<size_t, bool>> inputs;  // value id -> (layer index, conv)
  std::vector<int> nodes(layers.size(), -1);
  for (size_t i = 0; i < layers.size(); ++i) {
    nodes[i] = find_layer(quantized, layers[i].node);
    if (nodes[i] < 0) continue;
    const Node& n = quantized.nodes[size_t(nodes[i])];
    if (n.args.empty() || n.args[0].kind != Arg::Kind::Tensor) continue;
    inputs[n.args[0].ref] = {i, n.op == "aten::conv2d"};
  }
  std::vector<ChannelMean> means(layers.size());
  auto observe = [&](int id, const Tensor& t) {
    auto it = inputs.find(id);
    if (it != inputs.end() && t.dtype == ScalarType::Float32) {
      means[it->second.first].add(t.data_as<float>(), t.sizes, t.rank, it->second.second);
    }
  };
  // Graph inputs are read, not written: their means come from the samples themselves.
  double before = 0;
  absl::Status st = output_error(quantized, float_graph, samples, count, observe, &before);
  if (!st.ok()) return st;
  for (size_t s = 0; s < count; ++s) {
    for (size_t i = 0; i < quantized.inputs.size() && i < samples[s].size(); ++i) {
      auto it = inputs.find(quantized.inputs[i]);
      if (it == inputs.end() || samples[s][i].dtype != ScalarType::Float32) continue;
      const NpyArray& a = samples[s][i];
      means[it->second.first].add(a.as<float>(), a.shape.data(), int(a.shape.size()), it->second.second);
    }
  }
  result->output_error_before = before;

  // delta[o] = sum over the weight row of (W - W_q) * E[x of that input channel].
  std::vector<std::pair<int, Arg>> old_bias;  // node, its bias argument before
  for (size_t i = 0; i < layers.size(); ++i) {
    if (nodes[i] < 0 || means[i].count == 0) continue;
    Node& n = quantized.nodes[size_t(nodes[i])];
    const std::vector<int64_t>& ws = layers[i].weight_sizes;
    const bool conv = n.op == "aten::conv2d";
    if (ws.empty() || n.args.size() < 3) continue;
    const int64_t out = ws[0], per_row = int64_t(layers[i].weight_error.size()) / std::max<int64_t>(out, 1);
    const int64_t window = conv && ws.size() == 4 ? ws[2] * ws[3] : 1;
    const int64_t in_per_group = per_row / window;
    const int64_t groups = conv && n.args.size() > 6 && n.args[6].kind == Arg::Kind::Int ? n.args[6].i : 1;
    if (int64_t(means[i].sum.size()) != in_per_group * groups || groups < 1 || out % groups) continue;
    std::vector<float> bias(size_t(out), 0.0f);
    const Arg& b = n.args[2];
    if (b.kind == Arg::Kind::Tensor) {
      const Value& bv = quantized.values[b.ref];
      if (bv.constant < 0 || bv.dtype != ScalarType::Float32 || bv.numel() != out) continue;
      std::memcpy(bias.data(), quantized.constants[bv.constant].data.data(), size_t(out) * 4);
    } else if (b.kind != Arg::Kind::None) {
      continue;
    }
    for (int64_t o = 0; o < out; ++o) {
      const int64_t g0 = (o / (out / groups)) * in_per_group;
      double delta = 0;
      for (int64_t c = 0; c < in_per_group; ++c) {
        const double mean = means[i].sum[size_t(g0 + c)] / means[i].count;
        double w = 0;
        for (int64_t k = 0; k < window; ++k) w += layers[i].weight_error[size_t((o * in_per_group + c) * window + k)];
        delta += w * mean;
      }
      bias[size_t(o)] = float(double(bias[size_t(o)]) + delta);
    }
    old_bias.push_back({nodes[i], b});
    const int v = quantized.add_constant(n.name + "_bias_corrected", ScalarType::Float32, {out}, bias.data(),
                                         bias.size() * 4);
    quantized.nodes[size_t(nodes[i])].args[2] = Arg::tensor(v);
  }
  double after = 0;
  st = output_error(quantized, float_graph, samples, count, [](int, const Tensor&) {}, &after);
  if (!st.ok()) return st;
  result->output_error_after = after;
  result->layers = int(old_bias.size());
  result->applied = after < before;
  if (!result->applied) {
    for (const auto& [node, arg] : old_bias) quantized.nodes[size_t(node)].args[2] = arg;
  }
  return absl::OkStatus();
}

}  // namespace exporter
}  // namespace ember
