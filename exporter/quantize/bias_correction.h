// Bias correction for static int8 (ember export --quantize int8 --bias-correction): rounding a
// layer's weights to int8 shifts the mean of its outputs by (W - W_q) . E[x]; adding that
// shift back to the bias removes the systematic part of the error (Nagel et al., "Data-Free
// Quantization", the empirical variant: E[x] measured on the calibration data).
//
// E[x] is the mean of each input channel of the layer's (fake-quantized) input in the
// quantized graph over the calibration samples (conv2d: over N, H, W; linear: over every
// leading dim). Conv padding is ignored (the zeros at the borders are not in E[x]).
// "Where it helps": the corrected biases are kept only when they lower the relative L2 error
// of the program's first float output against the float graph on the same samples; otherwise
// the graph is left as it was. Either way the report says what happened.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "exporter/ir/graph.h"
#include "exporter/util/npy.h"

namespace ember {
namespace exporter {

struct BiasCorrectionLayer {
  std::string node;                // the conv2d / linear node's name (stable across rewrites)
  std::vector<float> weight_error;  // W - dequantize(W_q), in the weight's layout [O, ...]
  std::vector<int64_t> weight_sizes;
};

struct BiasCorrectionResult {
  bool applied = false;        // the corrected biases were kept
  double output_error_before = -1, output_error_after = -1;  // relative L2 of output 0 vs float
  int layers = 0;              // layers whose bias was corrected
};

// Corrects `quantized` (fake-quantized; `float_graph` is the same program before quantizing)
// on up to `max_samples` calibration samples.
absl::Status correct_biases(Graph& quantized, Graph& float_graph, const std::vector<BiasCorrectionLayer>& layers,
                            const std::vector<std::vector<NpyArray>>& samples, size_t max_samples,
                            BiasCorrectionResult* result);

}  // namespace exporter
}  // namespace ember
