// Ember's own quantizer (`ember export --quantize`) on a trained Fashion-MNIST CNN: static int8
// (calibrated on 64 training images) and weight-only int8 keep the float model's accuracy on
// the checked-in test images within a few images, shrink the program to under 0.3x, lower
// every layer to ember_quantized:: operators; --quantize-skip keeps a layer float; bad
// calibration data is an error that says what to do.
#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/quantize/quantizer.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/quant/quant_test_data.h"
#include "test/exporter/pte_runner.h"

namespace ember {
namespace {

using testing::repo_path;

const std::string kModel = "examples/models/fashion_cnn.pt2";

exporter::NpyArray load(const std::string& rel) { return testing::load_repo_npy(rel); }

int64_t argmax(const float* row) {
  int64_t best = 0;
  for (int64_t c = 1; c < 10; ++c) {
    if (row[c] > row[best]) best = c;
  }
  return best;
}

// Predictions of a program on the checked-in test images.
std::vector<int64_t> predict(const std::vector<uint8_t>& pte) {
  testing::PteRunner runner;
  EXPECT_EQ(runner.load(pte), "");
  const exporter::NpyArray images = load("test/quant/data/images.npy");
  std::vector<int64_t> out;
  const size_t per_image = 28 * 28 * 4;
  for (int64_t i = 0; i < images.shape[0]; ++i) {
    exporter::NpyArray x;
    x.dtype = ScalarType::Float32;
    x.shape = {1, 1, 28, 28};
    x.data.assign(images.data.begin() + static_cast<std::ptrdiff_t>(i * per_image),
                  images.data.begin() + static_cast<std::ptrdiff_t>((i + 1) * per_image));
    EXPECT_EQ(runner.run({x}), "");
    out.push_back(argmax(runner.output(0).as<float>()));
  }
  return out;
}

int correct(const std::vector<int64_t>& predictions) {
  const exporter::NpyArray labels = load("test/quant/data/labels.npy");
  int n = 0;
  for (size_t i = 0; i < predictions.size(); ++i) n += predictions[i] == labels.as<int64_t>()[i];
  return n;
}

exporter::ExportOptions int8_options() {
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int8;
  auto samples = exporter::read_calibration_samples(repo_path("test/quant/data/calibration.npy"));
  EXPECT_TRUE(samples.ok()) << samples.status();
  if (samples.ok()) o.quantize.calibration = *samples;
  return o;
}

class Quantizer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto f = exporter::export_pt2_file(repo_path(kModel), exporter::ExportOptions());
    ASSERT_TRUE(f.ok()) << f.status();
    float_pte_ = new std::vector<uint8_t>(f->pte);
    float_correct_ = correct(predict(*float_pte_));
  }
  static void TearDownTestSuite() { delete float_pte_; }
  static std::vector<uint8_t>* float_pte_;
  static int float_correct_;
};
std::vector<uint8_t>* Quantizer::float_pte_ = nullptr;
int Quantizer::float_correct_ = 0;

TEST_F(Quantizer, StaticInt8KeepsAccuracyAndShrinksTheProgram) {
  ASSERT_GE(float_correct_, 80);
  auto r = exporter::export_pt2_file(repo_path(kModel), int8_options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantize_report.quantized, 4);
  EXPECT_EQ(r->quantized_lowered, 4);
  EXPECT_EQ(r->portable_ops["ember_quantized::conv2d.default"], 2);
  EXPECT_EQ(r->portable_ops["ember_quantized::linear.default"], 2);
  EXPECT_EQ(r->portable_ops.count("aten::conv2d.default"), 0u);
  EXPECT_LE(r->pte.size() * 10, float_pte_->size() * 3) << "int8 program over 0.3x the float one";
  for (const exporter::LayerQuantization& l : r->quantize_report.layers) {
    EXPECT_TRUE(l.quantized) << l.node;
    EXPECT_GT(l.rel_l2, 0) << l.node << ": the error was not measured";
    EXPECT_LT(l.rel_l2, 0.1) << l.node;
    EXPECT_LT(l.quantized_weight_bytes, l.float_weight_bytes) << l.node;
  }
  const std::vector<int64_t> p = predict(r->pte);
  EXPECT_GE(correct(p), float_correct_ - 3) << "static int8 lost more than 3 of 100 test images";
}

TEST_F(Quantizer, PercentileObserverAlsoWorks) {
  exporter::ExportOptions o = int8_options();
  o.quantize.observer = exporter::RangeObserver::Percentile;
  o.quantize.percentile = 99.9;
  auto r = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantized_lowered, 4);
  EXPECT_GE(correct(predict(r->pte)), float_correct_ - 3);
}

TEST_F(Quantizer, WeightOnlyInt8) {
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int8Weight;
  auto r = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantize_report.quantized, 4);
  EXPECT_EQ(r->quantized_lowered, 0);  // activations stay float
  // The linear layers read their int8 weights in place; the convolutions dequantize theirs.
  EXPECT_EQ(r->weight_only_lowered, 2);
  EXPECT_EQ(r->portable_ops["ember_quantized::linear_weight_only.default"], 2);
  EXPECT_EQ(r->portable_ops["quantized_decomposed::dequantize_per_channel.default"], 2);
  EXPECT_LE(r->pte.size() * 10, float_pte_->size() * 3);
  // Per-channel int8 weights: about 1% relative L2 at most on this model (measured 0.0036-0.0118).
  for (const exporter::LayerQuantization& l : r->quantize_report.layers) EXPECT_LT(l.rel_l2, 0.02) << l.node;
  EXPECT_GE(correct(predict(r->pte)), float_correct_ - 1);
}

TEST_F(Quantizer, Int4WeightGroupwise) {
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int4Weight;
  o.quantize.group_size = 32;
  auto r = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantize_report.quantized, 2);  // the two linear layers; the convolutions stay float
  // Lowered to the weight-only operator, int4 values packed two per byte.
  EXPECT_EQ(r->weight_only_lowered, 2);
  EXPECT_EQ(r->portable_ops["ember_quantized::linear_weight_only.default"], 2);
  EXPECT_EQ(r->portable_ops.count("quantized_decomposed::dequantize_per_channel_group.default"), 0u);
  for (const exporter::LayerQuantization& l : r->quantize_report.layers) {
    if (l.op == "aten::conv2d") {
      EXPECT_FALSE(l.quantized);
    } else {
      EXPECT_LT(l.rel_l2, 0.15) << l.node;  // int4: about 10% per weight (measured 0.106)
    }
  }
  EXPECT_LE(r->pte.size() * 4, float_pte_->size()) << "int4 program over 0.25x the float one (measured 0.204x)";
  EXPECT_GE(correct(predict(r->pte)), float_correct_ - 3);

  // 1,568 inputs per row of the first linear layer: groups of 64 do not divide them, so it
  // gets int8 weights per channel (and says so); the 128-input head stays int4.
  o.quantize.group_size = 64;
  auto mixed = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  int int4 = 0, int8 = 0;
  for (const auto& l : mixed->quantize_report.layers) {
    if (!l.quantized) continue;
    if (l.node == "linear") {
      EXPECT_EQ(l.bits, 8);
      EXPECT_NE(l.note.find("does not divide its 1568 inputs"), std::string::npos) << l.note;
      EXPECT_LT(l.rel_l2, 0.02) << "int8 per-channel weight error";
    }
    int4 += l.bits == 4;
    int8 += l.bits == 8;
  }
  EXPECT_EQ(int4, 1);
  EXPECT_EQ(int8, 1);
  EXPECT_GE(correct(predict(mixed->pte)), float_correct_ - 3);
}

TEST_F(Quantizer, SkipPatternKeepsALayerFloat) {
  exporter::ExportOptions o = int8_options();
  o.quantize.skip = {"linear_1"};  // the classifier head, by .pt2 node name
  auto r = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->quantize_report.quantized, 3);
  EXPECT_EQ(r->quantized_lowered, 3);
  EXPECT_EQ(r->portable_ops["aten::linear.default"], 1);
  bool reported = false;
  for (const exporter::LayerQuantization& l : r->quantize_report.layers) {
    if (l.node == "linear_1") reported = !l.quantized && l.why_not.find("skip") != std::string::npos;
  }
  EXPECT_TRUE(reported);
  EXPECT_GE(correct(predict(r->pte)), float_correct_ - 3);
}

TEST_F(Quantizer, BadCalibrationIsAnErrorThatSaysWhatToDo) {
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int8;
  auto none = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(std::string(none.status().message()).find("--calibrate"), std::string::npos) << none.status();

  exporter::NpyArray wrong;  // [2, 28, 28]: no channel dimension
  wrong.dtype = ScalarType::Float32;
  wrong.shape = {2, 28, 28};
  wrong.data.assign(2 * 28 * 28 * 4, 0);
  o.quantize.calibration = {{wrong}};
  auto bad = exporter::export_pt2_file(repo_path(kModel), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("calibration sample 0"), std::string::npos) << bad.status();

  o = int8_options();
  o.quantize.percentile = 30;
  o.quantize.observer = exporter::RangeObserver::Percentile;
  EXPECT_FALSE(exporter::export_pt2_file(repo_path(kModel), o).ok());

  EXPECT_FALSE(exporter::read_calibration_samples(repo_path("test/quant/data/no_such_dir")).ok());
}

}  // namespace
}  // namespace ember
