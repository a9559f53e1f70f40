// The Fashion-MNIST CNN's int8 programs on Qualcomm's HTP (the simulator library on x86-64):
// the PT2E twin and Ember's own --quantize int8, exported with the QNN partitioner, run every
// operator in one QNN delegate and match the portable int8 program within a quantization step
// of the logits on every checked-in test image, with the same predictions (up to one image).
#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/util/npy.h"
#include "runtime/core/event_tracer.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"
#include "test/quant/quant_test_data.h"

namespace ember {
namespace {

using testing::repo_path;

int64_t argmax(const float* row, int64_t n) {
  int64_t best = 0;
  for (int64_t c = 1; c < n; ++c) {
    if (row[c] > row[best]) best = c;
  }
  return best;
}

exporter::ExportOptions options_for(const std::string& model, bool qnn,
                                    exporter::QuantizeMode mode = exporter::QuantizeMode::Int8) {
  exporter::ExportOptions o;
  if (qnn) o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>());
  if (model == "fashion_cnn") {  // Ember's own quantizer, calibrated on 64 training images
    o.quantize.mode = mode;
    auto samples = exporter::read_calibration_samples(repo_path("test/quant/data/calibration.npy"));
    EXPECT_TRUE(samples.ok()) << samples.status();
    if (samples.ok()) o.quantize.calibration = *samples;
  }
  return o;
}

class QnnFashion : public ::testing::TestWithParam<const char*> {};

TEST_P(QnnFashion, OneDelegateMatchesPortableInt8WithinAStep) {
  EMBER_REQUIRE_QNN();
  const std::string model = GetParam();
  const std::string path = repo_path("examples/models/" + model + ".pt2");
  auto portable = exporter::export_pt2_file(path, options_for(model, false));
  ASSERT_TRUE(portable.ok()) << portable.status();
  auto on_qnn = exporter::export_pt2_file(path, options_for(model, true));
  ASSERT_TRUE(on_qnn.ok()) << on_qnn.status();
  for (const std::string& w : on_qnn->warnings) std::printf("warning: %s\n", w.c_str());
  for (const std::string& w : on_qnn->backends[0].notes) std::printf("note: %s\n", w.c_str());
  // Everything on the HTP in one delegate: the integer layers, pooling, flatten and the Q/DQ.
  ASSERT_EQ(on_qnn->backends.size(), 1u);
  EXPECT_EQ(on_qnn->backends[0].backend_id, "qnn");
  EXPECT_EQ(on_qnn->backends[0].delegates, 1);
  EXPECT_TRUE(on_qnn->portable_ops.empty());
  EXPECT_EQ(on_qnn->backends[0].ops["ember_quantized::conv2d.default"], 2);
  EXPECT_EQ(on_qnn->backends[0].ops["ember_quantized::linear.default"], 2);

  testing::PteRunner ref, npu;
  ASSERT_EQ(ref.load(portable->pte), "");
  ASSERT_EQ(npu.load(on_qnn->pte), "");
  const exporter::NpyArray images = testing::load_repo_npy("test/quant/data/images.npy");
  const exporter::NpyArray labels = testing::load_repo_npy("test/quant/data/labels.npy");
  const int64_t n = images.shape[0];
  std::vector<float> seen;  // every portable logit: their spacing gives the quantization step
  int disagreements = 0, correct_ref = 0, correct_npu = 0;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const exporter::NpyArray x = testing::fashion_image(images, i);
    ASSERT_EQ(ref.run({x}), "");
    ASSERT_EQ(npu.run({x}), "");
    const exporter::NpyArray a = ref.output(0), b = npu.output(0);
    ASSERT_EQ(b.shape, a.shape);
    seen.insert(seen.end(), a.as<float>(), a.as<float>() + 10);
    for (int c = 0; c < 10; ++c) worst = std::max(worst, std::fabs(double(a.as<float>()[c]) - b.as<float>()[c]));
    const int64_t pa = argmax(a.as<float>(), 10), pb = argmax(b.as<float>(), 10);
    disagreements += pa != pb;
    correct_ref += pa == labels.as<int64_t>()[i];
    correct_npu += pb == labels.as<int64_t>()[i];
  }
  // The logits are (q - zero_point) * scale: the smallest gap between distinct values is one step.
  std::sort(seen.begin(), seen.end());
  double step = 1e30;
  for (size_t i = 1; i < seen.size(); ++i) {
    if (seen[i] - seen[i - 1] > 1e-6) step = std::min(step, double(seen[i] - seen[i - 1]));
  }
  ASSERT_LT(step, 1.0);
  std::printf("[%s qnn] worst logit difference %.4f (%.2f steps of %.4f), %d of %lld predictions differ; correct: "
              "portable int8 %d, qnn %d\n",
              model.c_str(), worst, worst / step, step, disagreements, static_cast<long long>(n), correct_ref,
              correct_npu);
  // Integer sums are exact on both sides; the HTP requantizes with its own rounding, so a logit
  // may land one step away (measured: exactly one step at worst, on both programs).
  EXPECT_LE(worst, step * 1.001);
  EXPECT_LE(disagreements, 1);
}

// `ember profile` of a QNN program: the HTP's per-operator profile comes back as one DelegateOp
// event per QNN operator of the graph (its convolutions and fully connected layers by name),
// within the delegate call's interval.
TEST(QnnProfile, HtpOperatorsAreTraced) {
  EMBER_REQUIRE_QNN();
  exporter::ExportOptions o = options_for("fashion_cnn_int8_pt2e", true);
  auto r = exporter::export_pt2_file(repo_path("examples/models/fashion_cnn_int8_pt2e.pt2"), o);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<TraceEvent> events(256);
  BufferEventTracer tracer(events.data(), events.size());
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte, "forward", &tracer), "");
  exporter::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {1, 1, 28, 28};
  x.data.assign(28 * 28 * 4, 0);
  ASSERT_EQ(runner.run({x}), "");
  std::map<std::string, int> ops;
  uint64_t call_start = 0, call_end = 0;
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind == TraceEventKind::Instruction && e.delegate_index == 0) {
      call_start = e.start_ns;
      call_end = e.end_ns;
    }
  }
  for (size_t i = 0; i < tracer.size(); ++i) {
    const TraceEvent& e = events[i];
    if (e.kind != TraceEventKind::DelegateOp) continue;
    ops[e.name]++;
    EXPECT_GE(e.start_ns, call_start);
    EXPECT_LE(e.end_ns, call_end);
  }
  EXPECT_EQ(ops["Conv2d"], 2);
  EXPECT_EQ(ops["FullyConnected"], 2);
  EXPECT_EQ(ops["PoolMax2d"], 2);
}

INSTANTIATE_TEST_SUITE_P(Programs, QnnFashion, ::testing::Values("fashion_cnn_int8_pt2e", "fashion_cnn"));

// Ember's own `--quantize a16w8` (int16 activations, int8 weights) of the float Fashion CNN on the
// HTP: one delegate, and logits closer to the float program's than the int8 program's on QNN,
// with the float program's predictions.
TEST(QnnFashionA16w8, OneDelegateCloserToFloatThanInt8) {
  EMBER_REQUIRE_QNN();
  const std::string path = repo_path("examples/models/fashion_cnn.pt2");
  auto a16 = exporter::export_pt2_file(path, options_for("fashion_cnn", true, exporter::QuantizeMode::A16W8));
  ASSERT_TRUE(a16.ok()) << a16.status();
  ASSERT_EQ(a16->backends.size(), 1u);
  EXPECT_EQ(a16->backends[0].delegates, 1);
  EXPECT_TRUE(a16->portable_ops.empty());
  EXPECT_EQ(a16->backends[0].ops["aten::conv2d.default"], 2);
  auto int8 = exporter::export_pt2_file(path, options_for("fashion_cnn", true));
  ASSERT_TRUE(int8.ok()) << int8.status();
  auto fl = exporter::export_pt2_file(path, exporter::ExportOptions());
  ASSERT_TRUE(fl.ok()) << fl.status();

  testing::PteRunner r16, r8, rf;
  ASSERT_EQ(r16.load(a16->pte), "");
  ASSERT_EQ(r8.load(int8->pte), "");
  ASSERT_EQ(rf.load(fl->pte), "");
  const exporter::NpyArray images = testing::load_repo_npy("test/quant/data/images.npy");
  const int64_t n = images.shape[0];
  double err16 = 0, err8 = 0, norm = 0;
  int differ16 = 0, differ8 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const exporter::NpyArray x = testing::fashion_image(images, i);
    ASSERT_EQ(r16.run({x}), "");
    ASSERT_EQ(r8.run({x}), "");
    ASSERT_EQ(rf.run({x}), "");
    const exporter::NpyArray a = r16.output(0), b = r8.output(0), f = rf.output(0);
    for (int c = 0; c < 10; ++c) {
      const double ref = f.as<float>()[c];
      err16 += (a.as<float>()[c] - ref) * (a.as<float>()[c] - ref);
      err8 += (b.as<float>()[c] - ref) * (b.as<float>()[c] - ref);
      norm += ref * ref;
    }
    const int64_t pf = argmax(f.as<float>(), 10);
    differ16 += argmax(a.as<float>(), 10) != pf;
    differ8 += argmax(b.as<float>(), 10) != pf;
  }
  const double e16 = std::sqrt(err16 / norm), e8 = std::sqrt(err8 / norm);
  std::printf("[fashion_cnn qnn] logits rel. L2 to float: a16w8 %.2e, int8 %.2e (%.1fx); predictions unlike float's: "
              "a16w8 %d, int8 %d of %lld\n",
              e16, e8, e8 / e16, differ16, differ8, static_cast<long long>(n));
  // The int8 weights' rounding is common to both and dominates here (measured: 5.5e-3 vs 9.5e-3).
  EXPECT_LT(e16, 0.75 * e8);
  EXPECT_LE(differ16, 1);
}

}  // namespace
}  // namespace ember
