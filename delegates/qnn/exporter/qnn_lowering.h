// The QNN partitioner's per-partition state, shared by its op-table entries
// (delegates/qnn/exporter/ops/*.cc), and the quantization analysis that decides which float
// operators can run on the HTP.
//
// The HTP runs quantized graphs. Ember's int8 programs (Ember's --quantize int8, PT2E programs
// lowered to ember_quantized:: operators) keep the float operators between integer layers in
// PyTorch's reference form: dequantize -> float op -> quantize. QuantAnalysis gives each value
// the quantized form it has on the HTP (QRep): int8/uint8 tensors their own parameters, the
// float output of a dequantize its input's, and the float output of a supported op the
// parameters of the quantize nodes that read it (or, for ops that keep the grid such as max
// pooling, relu and shape ops, its input's). A float op runs on the HTP when every input and its
// output have a QRep; inside the graph it then reads and writes quantized tensors, and the
// dequantize / quantize nodes around it become aliases.
//
// Layout: 4-D activations are NHWC inside the HTP graph, Ember's tensors NCHW. Each value may
// have a QNN tensor in either layout; input() adds the Transpose when the other one exists.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_graph_builder.h"
#include "exporter/ir/graph.h"
#include "exporter/partition/delegate_op_table.h"

namespace ember {
namespace qnn {

constexpr const char* kQuantizeOp = "quantized_decomposed::quantize_per_tensor.default";
constexpr const char* kDequantizeOp = "quantized_decomposed::dequantize_per_tensor.default";
constexpr const char* kDequantizePerChannelOp = "quantized_decomposed::dequantize_per_channel.default";
constexpr const char* kQuantizedConvOp = "ember_quantized::conv2d.default";
constexpr const char* kQuantizedLinearOp = "ember_quantized::linear.default";

// A value's quantized form on the HTP.
struct QRep {
  bool valid = false;
  double scale = 0;
  int64_t zero_point = 0;
  ScalarType dtype = ScalarType::Int8;  // Int8 or UInt8; Int16 for 16-bit activations (a16w8)
  bool operator==(const QRep& o) const {
    return valid == o.valid && scale == o.scale && zero_point == o.zero_point && dtype == o.dtype;
  }
};

// Per-tensor parameters of a quantize / dequantize node; invalid unless full-range int8 / uint8 /
// int16.
QRep qdq_params(const exporter::Node& n);
// The integer range of a quantized dtype (false for others).
bool grid_limits(ScalarType t, int64_t* lo, int64_t* hi);

class QuantAnalysis {
 public:
  explicit QuantAnalysis(const exporter::Graph& g);
  const QRep& rep(int value) const { return reps_[static_cast<size_t>(value)]; }
  const std::vector<int>& readers(int value) const { return readers_[static_cast<size_t>(value)]; }

 private:
  std::vector<QRep> reps_;
  std::vector<std::vector<int>> readers_;
};

// Float ops that leave values on their input's quantization grid (their output may take the
// input's QRep when no quantize node names one).
bool keeps_quantization_grid(const std::string& kernel);

enum class Layout { Ember, Nhwc };

// Context of one partition's lowering (and, with builder == null, of the cheap checks).
struct QnnLowering {
  QnnLowering(const exporter::Graph& graph, const QuantAnalysis& analysis, QnnGraphBuilder* builder,
              bool float_graph = false)
      : g(graph), quant(analysis), b(builder), float_graph(float_graph) {}

  const exporter::Graph& g;
  const QuantAnalysis& quant;
  QnnGraphBuilder* b;  // null in checks
  // An fp16 graph (qnn.precision=fp16): float32 tensors and weights, which the HTP computes in
  // fp16; only float ops are taken (no quantize / dequantize, no integer layers).
  bool float_graph;

  // Argument i of n when it is a tensor value (else -1).
  int arg_value(const exporter::Node& n, size_t i) const;
  const exporter::Value* arg(const exporter::Node& n, size_t i) const;
  int out_value(const exporter::Node& n) const;

  // The QNN tensor that holds value v in `layout` (quantized when v has a QRep), made on first
  // use: partition inputs become graph inputs, constants static tensors, the other layout a
  // Transpose. -1 (and the builder's error) when v cannot be had.
  int input(int v, Layout layout);
  // A new tensor for v produced by the node being lowered (quantized per v's QRep unless
  // `float_out`), recorded as v's tensor in `layout`.
  int output(int v, Layout layout, bool float_out = false);
  // v is the same tensor as `from` (quantize / dequantize nodes that become no-ops).
  void alias(int v, int from);
  // The layout v already has a tensor in (Ember if none yet).
  Layout current_layout(int v) const;

  // Graph inputs and outputs of the partition (Ember's shapes and dtypes), in call order.
  void set_boundary(const std::vector<int>& call_inputs, const std::vector<int>& call_outputs);
  std::string finish_outputs();  // adds the ops that produce the graph's outputs
  std::vector<int> io_inputs, io_outputs;  // QNN tensor indices, parallel to call order

  // Dims of v in `layout`.
  std::vector<uint32_t> dims(int v, Layout layout) const;
  TensorSpec spec_for(int v, Layout layout, bool float_spec) const;

 private:
  struct Tensors {
    int ember = -1, nhwc = -1;  // quantized (or v's own dtype when v has no QRep)
    int float_in = -1;          // graph input holding a float value that has a QRep
  };
  std::map<int, Tensors> tensors_;
  std::set<int> call_inputs_;
  std::vector<int> call_outputs_;
};

using QnnOpTable = exporter::DelegateOpTable<QnnLowering>;

// The table (built once): every aten / quantized op the QNN delegate lowers.
const QnnOpTable& qnn_op_table();

// Family registrations (delegates/qnn/exporter/ops/).
void add_quantize_ops(QnnOpTable& table);
void add_layer_ops(QnnOpTable& table);        // conv2d, linear
void add_pooling_ops(QnnOpTable& table);      // max / avg / adaptive-avg pooling, mean
void add_elementwise_ops(QnnOpTable& table);  // add / sub / mul, activations
void add_shape_ops(QnnOpTable& table);        // reshape / flatten / permute / squeeze / cat
void add_matmul_ops(QnnOpTable& table);       // matmul / bmm of two activations
void add_normalization_ops(QnnOpTable& table);  // layer_norm
void add_resize_pad_ops(QnnOpTable& table);   // constant pad, nearest / bilinear resize

// Shared checks for entries.
// "" when every tensor input of n and its output have a QRep (a float op in reference form); in
// an fp16 graph, when they are all static float32 tensors (constants included).
std::string check_quantized_float_op(const QnnLowering& ctx, const exporter::Node& n);
// Argument i as `count` ints (list or one repeated), `dflt` when absent.
std::vector<int64_t> int_list(const exporter::Node& n, size_t i, size_t count, int64_t dflt);
double number_arg(const exporter::Node& n, size_t i, double dflt);
bool bool_arg(const exporter::Node& n, size_t i, bool dflt);
// The op that clamps a tensor on grid `r` to [*lo, *hi] (real values): bounds are first cut to
// the grid's range; "Relu" when that leaves [0, the grid's top], "ReluMinMax" otherwise, and
// null when the bounds cover the whole grid (nothing to do). The HTP simulator runs
// ReluMinMax(0, hi) with hi at or past the grid's top as an identity (negatives pass), hence
// the plain Relu (case relu6 of test/delegates/qnn/qnn_ops_test.cc).
const char* clamp_op(const QRep& r, double* lo, double* hi);

// Position of dim d (Ember order, rank 4) in NHWC.
inline uint32_t nhwc_axis(int64_t d) {
  static const uint32_t map[4] = {0, 3, 1, 2};
  return map[d];
}

}  // namespace qnn
}  // namespace ember
