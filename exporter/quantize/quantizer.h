// Ember's own quantizer (`ember export --quantize ...`), C++ only: rewrites a float graph into
// the same quantize/dequantize form PyTorch's PT2E flow produces, so one lowering
// (passes/lower_quantized.cc) turns both into ember_quantized:: operators.
//
//  - Int8 (static): conv2d / convolution (2-D) / linear layers with constant float weights get
//    per-channel symmetric int8 weights (scale = max|w| / 127 per output channel) and
//    per-tensor asymmetric int8 activations in and out (a following relu is fused into the
//    output range). Activation ranges come from calibration: the graph runs on each sample
//    with the linked kernels and an observer records every layer input's and output's range:
//    min/max, or a histogram percentile (clips rare outliers; two passes over the samples).
//  - A16W8 (static): the same, with per-tensor asymmetric int16 activations: what NPU users reach
//    for when int8 activations lose accuracy (the QNN delegate runs it; the portable kernels run
//    its layers in float between the 16-bit quantize / dequantize nodes).
//  - Int8Weight: weight-only int8 for conv, linear and embedding (per output channel / per
//    row); activations stay float; the weights are dequantized when the program runs.
//  - Int4Weight: weight-only int4 for linear and embedding, symmetric per group of
//    `group_size` consecutive inputs of a row (scale = max|w| / 7, values in [-8, 7], stored
//    one per int8 byte), dequantized by quantized_decomposed::dequantize_per_channel_group
//    when the program runs. A group size that does not divide a layer's row is an error.
//
// Layers whose node name or source line contains a `skip` pattern stay float. The report
// lists every candidate layer: quantized or why not, and its output's error against the float
// graph on the calibration samples (relative L2 of the dequantized output, errors of earlier
// layers included: where the error grows is where to skip).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/ir/graph.h"
#include "exporter/quantize/bias_correction.h"
#include "exporter/util/npy.h"

namespace ember {
namespace exporter {

enum class QuantizeMode { None, Int8, A16W8, Int8Weight, Int4Weight };

// Int8 and A16W8: activations calibrated and quantized (static).
inline bool quantizes_activations(QuantizeMode m) { return m == QuantizeMode::Int8 || m == QuantizeMode::A16W8; }
enum class RangeObserver { MinMax, Percentile };

struct QuantizeOptions {
  QuantizeMode mode = QuantizeMode::None;
  // Int8: calibration samples, each one array per method input (dtype and shape as the graph's);
  // for a one-input method an array [N, ...] stacking inputs [B, ...] counts as N / B samples.
  std::vector<std::vector<NpyArray>> calibration;
  RangeObserver observer = RangeObserver::MinMax;
  double percentile = 99.99;  // Percentile: keep this share of each tail's values, in percent
  std::vector<std::string> skip;  // substrings of node names or source lines left in float
  int64_t group_size = 32;        // Int4Weight
  bool bias_correction = false;   // Int8: correct biases for the weights' rounding (bias_correction.h)
  // Int8: also give a grid of its own to every float activation the layers' grids leave out:
  // the outputs of adds, multiplies, concatenations, average pools, means and unfused
  // activations (quantize -> dequantize after each, calibrated like the layers'). The program
  // then runs in integers end to end on an NPU, which has no float residual stream (the
  // exporter sets it when a partitioner asks, Partitioner::wants_integer_activations).
  bool all_activations = false;
};

struct LayerQuantization {
  std::string node;    // .pt2 node name
  std::string op;      // aten::conv2d, aten::linear, ...
  std::string source;  // "file:line in fn" when known
  bool quantized = false;
  std::string why_not;     // when not quantized
  double rel_l2 = -1;      // Int8: output vs float on the calibration data (mean over samples);
                           // Int8Weight: dequantized weight vs float weight; -1 when not measured
  size_t float_weight_bytes = 0, quantized_weight_bytes = 0;
  int bits = 0;        // 8 or 4 when quantized
  std::string note;    // e.g. why an int4-weight layer got int8 weights
};

struct QuantizeReport {
  std::vector<LayerQuantization> layers;  // graph order
  int quantized = 0;
  BiasCorrectionResult bias_correction;  // Int8 with bias_correction
};

// Rewrites `g` in place (canonicalized, static shapes for Int8). Errors: no calibration data
// for Int8, a sample that does not fit the method's inputs, a kernel failing on it.
absl::StatusOr<QuantizeReport> quantize_graph(Graph& g, const QuantizeOptions& options);

// Calibration samples from a path: a directory holding input_<i>.npy (one sample), a
// directory whose subdirectories each hold them (one sample each), or one .npy file (a sample
// of a one-input method, possibly stacked, see QuantizeOptions::calibration).
absl::StatusOr<std::vector<std::vector<NpyArray>>> read_calibration_samples(const std::string& path);

// The report as text: one line per layer and a summary.
std::string format_quantize_report(const QuantizeReport& report, QuantizeMode mode);

}  // namespace exporter
}  // namespace ember
