// Per-op differential tests of the QNN delegate (issue 28): each case in cases/ is a tiny PT2E
// int8 program (tools/models/make_qnn_op_cases.py: the op alone between quantize / dequantize,
// or conv -> op for the ops that keep their input's grid; seeded weights and inputs; boundary
// shapes: 1x1 spatial, 7x9, 3 / 5 / 33 channels). Each is exported twice, on the portable int8 kernels and with the QNN partitioner;
// the op under test must be claimed by QNN (or, where the HTP refuses a form, fall back to the
// portable kernels), and every output element must be within one quantization step of the
// portable int8 program's (the step: the scale of the dequantize that makes the output).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/import/pt2_importer.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"

namespace ember {
namespace {

std::string case_path(const std::string& file) {
  const std::string rel = "test/delegates/qnn/cases/" + file;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/" + rel;
  return rel;
}

struct OpCase {
  const char* name;
  const char* op;  // the operator under test, as the exporter names it after lowering
  bool on_qnn;     // false: the HTP refuses this form and it stays on the portable kernels
  int max_steps = 1;  // allowed difference from the portable int8 program, in output steps
};

constexpr const char* kConv = "ember_quantized::conv2d.default";
constexpr const char* kLinear = "ember_quantized::linear.default";

const OpCase kCases[] = {
    {"conv2d_3x3_pad1", kConv, true},
    {"conv2d_stride2", kConv, true},
    {"conv2d_dilation2", kConv, true},
    {"conv2d_groups2", kConv, true},
    {"conv2d_depthwise", kConv, true},
    {"conv2d_depthwise_c33", kConv, true},
    {"conv2d_1x1_c5_c33", kConv, true},
    {"conv2d_pad_1_2", kConv, true},
    {"conv2d_c3_c5", kConv, true},
    {"conv2d_1x1_spatial", kConv, true},
    {"conv2d_relu_fused", kConv, true},  // relu folded into the conv's output range (ReluMinMax)
    {"linear", kLinear, true},
    {"linear_batch3", kLinear, true},
    {"add", "aten::add.Tensor", true},
    {"add_c33_1x1", "aten::add.Tensor", true},
    {"mul", "aten::mul.Tensor", true},
    {"sub", "aten::sub.Tensor", true},
    {"relu", "aten::relu.default", true},
    {"relu6", "aten::relu6.default", true},
    {"hardtanh", "aten::hardtanh.default", true},
    {"hardswish", "aten::hardswish.default", true},
    {"sigmoid", "aten::sigmoid.default", true},
    {"tanh", "aten::tanh.default", true},
    {"relu_1x1_spatial_c5", "aten::relu.default", true},
    {"relu6_wide", "aten::relu6.default", true},
    {"hardtanh_0_05", "aten::hardtanh.default", true},
    {"sigmoid_c33", "aten::sigmoid.default", true},
    {"max_pool2d_2x2", "aten::max_pool2d.default", true},
    {"max_pool2d_3x3_s2_p1_ceil", "aten::max_pool2d.default", true},
    {"max_pool2d_2x2_ceil_odd", "aten::max_pool2d.default", true},
    {"avg_pool2d_2x2", "aten::avg_pool2d.default", true},
    {"avg_pool2d_3x3_s2_p1", "aten::avg_pool2d.default", true},
    {"avg_pool2d_3x3_s2_p1_nopad", "aten::avg_pool2d.default", true},
    {"adaptive_avg_pool2d_1x1", "aten::adaptive_avg_pool2d.default", true},
    {"mean_keepdim", "aten::mean.dim", true},
    {"mean", "aten::mean.dim", true},
    {"softmax_4d", "aten::softmax.int", true},
    // Probabilities of 33 classes on a grid of 0.00089 (outputs up to 0.23): the HTP's softmax
    // resolves about 1/256 and then requantizes, so 14 of the 33 outputs land 2 steps away
    // (measured: 2 steps exactly). softmax_4d's grid (0.0033) is within one step.
    {"softmax_2d", "aten::softmax.int", true, 2},
    {"cat_channels", "aten::cat.default", true},
    {"flatten", "aten::flatten.using_ints", true},
    {"reshape", "aten::reshape.default", true},
    {"permute_hw", "aten::permute.default", true},
    {"permute_nhwc", "aten::permute.default", true},
    {"div", "aten::div.Tensor", true},
    {"matmul_2d", "aten::matmul.default", true},
    {"matmul_4d", "aten::matmul.default", true},
    {"bmm", "aten::bmm.default", true},
    {"layer_norm", "aten::layer_norm.default", true},
    {"pad_constant", "aten::pad.default", true},
    {"pad_value", "aten::pad.default", true},  // 0.25 quantized onto the conv output's grid
    {"upsample_nearest_x2", "aten::upsample_nearest2d.vec", true},
    {"upsample_bilinear_x2", "aten::upsample_bilinear2d.vec", true},
    {"upsample_bilinear_align", "aten::upsample_bilinear2d.vec", true},
};

using testing::number;
using testing::output_step;

// Moves each input onto the grid of the quantize node that reads it ((q - zp) * scale), so both
// programs start from the same integers: a float halfway between two grid points may round either
// way in the HTP's Quantize, and an op with a gain above one (tanh, sigmoid, softmax: output steps
// finer than the input's) would turn that one input step into two or three output steps.
void snap_inputs(const exporter::Graph& g, std::vector<exporter::NpyArray>* inputs) {
  for (size_t i = 0; i < inputs->size() && i < g.inputs.size(); ++i) {
    for (const exporter::Node& n : g.nodes) {
      if (n.kernel_name() != "quantized_decomposed::quantize_per_tensor.default" || n.args.size() < 5 ||
          n.args[0].kind != exporter::Arg::Kind::Tensor || n.args[0].ref != g.inputs[i]) {
        continue;
      }
      const double scale = number(n.args[1]), zp = number(n.args[2]), lo = number(n.args[3]), hi = number(n.args[4]);
      float* x = reinterpret_cast<float*>((*inputs)[i].data.data());
      for (size_t e = 0; e < (*inputs)[i].data.size() / sizeof(float); ++e) {
        const double q = std::min(hi, std::max(lo, std::nearbyint(x[e] / scale) + zp));
        x[e] = static_cast<float>((q - zp) * scale);
      }
      break;
    }
  }
}

std::string op_list(const std::map<std::string, int>& ops) {
  std::string s;
  for (const auto& kv : ops) s += (s.empty() ? "" : ", ") + kv.first + " x" + std::to_string(kv.second);
  return s.empty() ? "none" : s;
}

class QnnOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(QnnOps, MatchesPortableInt8WithinAStep) {
  EMBER_REQUIRE_QNN();
  const OpCase& c = GetParam();
  const std::string pt2 = case_path(std::string(c.name) + ".pt2");
  auto portable = exporter::export_pt2_file(pt2, exporter::ExportOptions());
  ASSERT_TRUE(portable.ok()) << portable.status();
  exporter::ExportOptions o;
  o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>());
  auto on_qnn = exporter::export_pt2_file(pt2, o);
  ASSERT_TRUE(on_qnn.ok()) << on_qnn.status();
  ASSERT_EQ(on_qnn->backends.size(), 1u);
  const exporter::BackendSummary& qnn = on_qnn->backends[0];
  EXPECT_EQ(qnn.backend_id, "qnn");
  std::printf("[%s] qnn: %s; portable: %s\n", c.name, op_list(qnn.ops).c_str(), op_list(on_qnn->portable_ops).c_str());
  auto claimed = qnn.ops.find(c.op);
  if (c.on_qnn) {
    EXPECT_TRUE(claimed != qnn.ops.end() && claimed->second > 0) << c.op << " not on QNN";
  } else {  // the HTP refused the form: the partitioner's fallback leaves it on the portable kernels
    EXPECT_TRUE(claimed == qnn.ops.end()) << c.op << " unexpectedly on QNN";
    EXPECT_GT(on_qnn->portable_ops.count(c.op), 0u) << c.op << " not on the portable kernels either";
  }
  if (::testing::Test::HasFailure()) {
    for (const std::string& w : on_qnn->warnings) std::printf("warning: %s\n", w.c_str());
    for (const std::string& w : qnn.notes) std::printf("note: %s\n", w.c_str());
  }

  std::vector<exporter::NpyArray> inputs;  // <case>_input.npy, and <case>_input1.npy for binary ops
  for (const char* suffix : {"_input.npy", "_input1.npy"}) {
    const std::string path = case_path(c.name + std::string(suffix));
    if (inputs.size() == 1 && !std::ifstream(path).good()) break;
    auto input = exporter::read_npy(path);
    ASSERT_TRUE(input.ok()) << input.status();
    inputs.push_back(std::move(*input));
  }
  auto graph = exporter::import_pt2(pt2);
  ASSERT_TRUE(graph.ok()) << graph.status();
  snap_inputs(*graph, &inputs);
  testing::PteRunner ref(1 << 20, 4 << 20), npu(1 << 20, 4 << 20);
  ASSERT_EQ(ref.load(portable->pte), "");
  ASSERT_EQ(npu.load(on_qnn->pte), "");
  ASSERT_EQ(ref.run(inputs), "");
  ASSERT_EQ(npu.run(inputs), "");
  const exporter::NpyArray a = ref.output(0), b = npu.output(0);
  ASSERT_EQ(b.shape, a.shape);
  ASSERT_EQ(a.dtype, ScalarType::Float32);
  const double step = output_step(*graph);
  ASSERT_GT(step, 0) << "the output is not made by a per-tensor dequantize";
  const int64_t n = static_cast<int64_t>(a.data.size() / sizeof(float));
  double worst = 0;
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = std::fabs(double(a.as<float>()[i]) - double(b.as<float>()[i]));
    worst = std::max(worst, d);
    off += d > step * 0.5;
  }
  std::printf("[%s] %lld outputs: worst difference %.5f = %.2f steps of %.5f; %lld elements a step away\n", c.name,
              static_cast<long long>(n), worst, worst / step, step, static_cast<long long>(off));
  // Both sides compute the integer sums exactly; the HTP requantizes (and evaluates sigmoid,
  // tanh, hardswish, softmax, averages) with its own rounding, so an element may land one step
  // away (measured: worst exactly 1 step in 25 cases, 0 in 17; softmax_2d 2 steps, above).
  EXPECT_LE(worst, step * (c.max_steps + 0.001));
}

INSTANTIATE_TEST_SUITE_P(Cases, QnnOps, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember
