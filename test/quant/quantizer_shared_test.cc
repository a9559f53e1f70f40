// Ember's quantizer on the shared models (../shared; skipped without it): tiny_llama with
// int4 weights, MobileNetV2 and ResNet18 with static int8. Their weights are seeded random,
// so only the distance to the float program means anything (bounds in docs/quantization.md).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "delegates/xnnpack/exporter/xnnpack_partitioner.h"
#include "exporter/exporter.h"
#include "exporter/quantize/quantizer.h"
#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace {

// tiny_llama (../shared; seeded random weights): int4 weights in groups of 32 (its two
// feed-forward output layers, whose rows have 344 inputs that 32 does not divide, get int8
// weights per channel) take the program to under 0.4x (measured 0.19x); its logits stay within
// 0.15 relative L2 of the float program's (measured 0.124), on the portable kernels and on
// XNNPACK (qd8-f32-qb4w / qc8w fully connected; 0.124 too, 0.007 from the portable logits).
TEST(QuantizerShared, TinyLlamaInt4Weight) {
  const std::string dir = testing::shared_dir() + "/models/tiny_llama";
  if (!testing::file_exists(dir + "/model.pt2")) GTEST_SKIP() << "no ../shared";
  auto f = exporter::export_pt2_file(dir + "/model.pt2", exporter::ExportOptions());
  ASSERT_TRUE(f.ok()) << f.status();
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int4Weight;
  o.quantize.group_size = 32;
  auto q = exporter::export_pt2_file(dir + "/model.pt2", o);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->quantize_report.quantized, static_cast<int>(q->quantize_report.layers.size()));
  int int8 = 0, linear = 0;
  for (const auto& l : q->quantize_report.layers) {
    int8 += l.bits == 8;
    linear += l.op == "aten::linear";
  }
  EXPECT_EQ(linear, 15);  // and the token embedding
  EXPECT_EQ(int8, 2);  // the 344-input rows
  EXPECT_LE(q->pte.size() * 10, f->pte.size() * 4);
  exporter::ExportOptions xo = o;
  xo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto qx = exporter::export_pt2_file(dir + "/model.pt2", xo);
  ASSERT_TRUE(qx.ok()) << qx.status();
  ASSERT_EQ(qx->backends.size(), 1u);
  EXPECT_EQ(qx->backends[0].ops["ember_quantized::linear_weight_only.default"], linear);
  EXPECT_LE(qx->pte.size() * 10, f->pte.size() * 4);
  std::vector<exporter::NpyArray> inputs;
  for (int i = 0; i < 2; ++i) {
    auto a = exporter::read_npy(dir + "/input_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(a.ok()) << a.status();
    inputs.push_back(*a);
  }
  testing::PteRunner fr, qr, xr;
  ASSERT_EQ(fr.load(f->pte), "");
  ASSERT_EQ(qr.load(q->pte), "");
  ASSERT_EQ(xr.load(qx->pte), "");
  ASSERT_EQ(fr.run(inputs), "");
  ASSERT_EQ(qr.run(inputs), "");
  ASSERT_EQ(xr.run(inputs), "");
  const double portable_vs_float = testing::relative_l2(qr.output(0), fr.output(0));
  const double xnnpack_vs_float = testing::relative_l2(xr.output(0), fr.output(0));
  const double xnnpack_vs_portable = testing::relative_l2(xr.output(0), qr.output(0));
  // The figures docs/quantization.md quotes per CPU (issue 26: 0.251 vs portable on Zen 5).
  std::printf("[tiny_llama int4 g32] relative L2: portable vs float %.4f, XNNPACK vs float %.4f, XNNPACK vs "
              "portable %.4f\n",
              portable_vs_float, xnnpack_vs_float, xnnpack_vs_portable);
  EXPECT_LT(portable_vs_float, 0.15);
  EXPECT_LT(xnnpack_vs_float, 0.15);
  EXPECT_LT(xnnpack_vs_portable, 0.02);
}

// MobileNetV2 and ResNet18 from ../shared (seeded random weights, so only the distance to
// the float program means anything), calibrated on their one reference input: every conv and
// linear layer becomes an integer operator (MobileNetV2's relu6 folded into the output
// ranges), the programs shrink under 0.3x, the top class stays and the outputs stay within
// the bounds docs/quantization.md documents (measured 0.218 and 0.017 relative L2).
TEST(QuantizerShared, MobileNetV2AndResNet18Int8) {
  struct Model {
    const char* name;
    int layers;
    double bound;
  };
  for (const Model& m : {Model{"mobilenet_v2", 53, 0.3}, Model{"resnet18", 21, 0.05}}) {
    const std::string dir = testing::shared_dir() + "/models/" + m.name;
    if (!testing::file_exists(dir + "/model.pt2")) GTEST_SKIP() << "no ../shared";
    auto f = exporter::export_pt2_file(dir + "/model.pt2", exporter::ExportOptions());
    ASSERT_TRUE(f.ok()) << f.status();
    exporter::ExportOptions o;
    o.quantize.mode = exporter::QuantizeMode::Int8;
    auto samples = exporter::read_calibration_samples(dir + "/input_0.npy");
    ASSERT_TRUE(samples.ok()) << samples.status();
    o.quantize.calibration = *samples;
    auto q = exporter::export_pt2_file(dir + "/model.pt2", o);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->quantized_lowered, m.layers) << m.name;
    EXPECT_EQ(q->portable_ops.count("aten::hardtanh.default"), 0u) << m.name << ": relu6 not fused";
    EXPECT_LE(q->pte.size() * 10, f->pte.size() * 3) << m.name;
    auto input = exporter::read_npy(dir + "/input_0.npy");
    ASSERT_TRUE(input.ok());
    testing::PteRunner fr, qr;
    ASSERT_EQ(fr.load(f->pte), "");
    ASSERT_EQ(qr.load(q->pte), "");
    ASSERT_EQ(fr.run({*input}), "");
    ASSERT_EQ(qr.run({*input}), "");
    const exporter::NpyArray a = fr.output(0), b = qr.output(0);
    EXPECT_LT(testing::relative_l2(b, a), m.bound) << m.name;
    int64_t fa = 0, fb = 0;
    for (int64_t i = 1; i < a.numel(); ++i) {
      fa = a.as<float>()[i] > a.as<float>()[fa] ? i : fa;
      fb = b.as<float>()[i] > b.as<float>()[fb] ? i : fb;
    }
    EXPECT_EQ(fa, fb) << m.name << ": the top class changed";
  }
}

// --bias-correction (exporter/quantize/bias_correction.h) "where it helps": on ResNet18 it is
// kept and lowers the output error against float, on the calibration input (measured 0.0160 ->
// 0.0113) and on held-out inputs of the same distribution (measured 0.0169 -> 0.0114 on three);
// on MobileNetV2 (random batch-norm statistics, docs/quantization.md) it would raise it (0.220
// -> 0.278), so it is not kept and the program is byte for byte the uncorrected one.
TEST(QuantizerShared, BiasCorrectionKeptOnlyWhereItHelps) {
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    const std::string dir = testing::shared_dir() + "/models/" + name;
    if (!testing::file_exists(dir + "/model.pt2")) GTEST_SKIP() << "no ../shared";
    const bool helps = std::string(name) == "resnet18";
    exporter::ExportOptions o;
    o.quantize.mode = exporter::QuantizeMode::Int8;
    auto samples = exporter::read_calibration_samples(dir + "/input_0.npy");
    ASSERT_TRUE(samples.ok()) << samples.status();
    o.quantize.calibration = *samples;
    auto plain = exporter::export_pt2_file(dir + "/model.pt2", o);
    ASSERT_TRUE(plain.ok()) << plain.status();
    o.quantize.bias_correction = true;
    auto corrected = exporter::export_pt2_file(dir + "/model.pt2", o);
    ASSERT_TRUE(corrected.ok()) << corrected.status();
    const exporter::BiasCorrectionResult& bc = corrected->quantize_report.bias_correction;
    EXPECT_GE(bc.layers, helps ? 18 : 50) << name;
    EXPECT_EQ(bc.applied, helps) << name;
    EXPECT_GT(bc.output_error_before, 0) << name;
    if (helps) {
      EXPECT_LT(bc.output_error_after, bc.output_error_before * 0.8) << name;
      // Held out: another input of the same distribution (seeded), against the float program.
      auto f = exporter::export_pt2_file(dir + "/model.pt2", exporter::ExportOptions());
      ASSERT_TRUE(f.ok()) << f.status();
      exporter::NpyArray x = (*samples)[0][0];
      std::mt19937 rng(7);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int64_t i = 0; i < x.numel(); ++i) reinterpret_cast<float*>(x.data.data())[i] = normal(rng);
      testing::PteRunner fr, pr, cr;
      ASSERT_EQ(fr.load(f->pte), "");
      ASSERT_EQ(pr.load(plain->pte), "");
      ASSERT_EQ(cr.load(corrected->pte), "");
      ASSERT_EQ(fr.run({x}), "");
      ASSERT_EQ(pr.run({x}), "");
      ASSERT_EQ(cr.run({x}), "");
      const double before = testing::relative_l2(pr.output(0), fr.output(0));
      const double after = testing::relative_l2(cr.output(0), fr.output(0));
      std::printf("[bias correction %s] held-out output rel. L2 %.5f -> %.5f\n", name, before, after);
      EXPECT_LT(after, before * 0.9) << name;
    } else {
      EXPECT_GE(bc.output_error_after, bc.output_error_before) << name;
      EXPECT_EQ(corrected->pte, plain->pte) << name << ": a correction that was not kept changed the program";
    }
  }
}

// The same int8 programs exported with --backend xnnpack: every operator (integer convolutions
// and linear layers, Q/DQ, residual adds, pooling) runs on XNNPACK, and the outputs stay within
// the same bounds of the float XNNPACK program (measured 0.235 and 0.0165). Against the int8
// program on the portable kernels they differ by 0.151 and 0.012: XNNPACK's requantization
// puts some values one quantization step from the portable kernels' (per-op differential
// tests in test/delegates/xnnpack/xnnpack_quantized_ops_test.cc), and MobileNetV2's random
// layers amplify those steps as they amplify its quantization error (docs/quantization.md).
// MobileNetV2's top class is not kept on XNNPACK (its random logits are close); ResNet18's is.
TEST(QuantizerShared, MobileNetV2AndResNet18Int8OnXnnpack) {
  struct Model {
    const char* name;
    double bound_fp32, bound_portable;
    bool top_class_kept;
  };
  for (const Model& m : {Model{"mobilenet_v2", 0.3, 0.2, false}, Model{"resnet18", 0.05, 0.03, true}}) {
    const std::string dir = testing::shared_dir() + "/models/" + m.name;
    if (!testing::file_exists(dir + "/model.pt2")) GTEST_SKIP() << "no ../shared";
    exporter::ExportOptions fo;
    fo.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    auto f = exporter::export_pt2_file(dir + "/model.pt2", fo);
    ASSERT_TRUE(f.ok()) << f.status();
    exporter::ExportOptions o;
    o.quantize.mode = exporter::QuantizeMode::Int8;
    auto samples = exporter::read_calibration_samples(dir + "/input_0.npy");
    ASSERT_TRUE(samples.ok()) << samples.status();
    o.quantize.calibration = *samples;
    auto p = exporter::export_pt2_file(dir + "/model.pt2", o);
    ASSERT_TRUE(p.ok()) << p.status();
    o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
    auto q = exporter::export_pt2_file(dir + "/model.pt2", o);
    ASSERT_TRUE(q.ok()) << q.status();
    ASSERT_EQ(q->backends.size(), 1u);
    EXPECT_TRUE(q->portable_ops.empty()) << m.name << ": operators left on the portable kernels";
    EXPECT_GT(q->backends[0].ops["ember_quantized::conv2d.default"], 0) << m.name;
    EXPECT_LE(q->pte.size() * 10, f->pte.size() * 3) << m.name;
    auto input = exporter::read_npy(dir + "/input_0.npy");
    ASSERT_TRUE(input.ok());
    testing::PteRunner fr, pr, qr;
    ASSERT_EQ(fr.load(f->pte), "");
    ASSERT_EQ(pr.load(p->pte), "");
    ASSERT_EQ(qr.load(q->pte), "");
    ASSERT_EQ(fr.run({*input}), "");
    ASSERT_EQ(pr.run({*input}), "");
    ASSERT_EQ(qr.run({*input}), "");
    const exporter::NpyArray a = fr.output(0), b = qr.output(0);
    EXPECT_LT(testing::relative_l2(b, a), m.bound_fp32) << m.name;
    EXPECT_LT(testing::relative_l2(b, pr.output(0)), m.bound_portable) << m.name;
    int64_t fa = 0, fb = 0;
    for (int64_t i = 1; i < a.numel(); ++i) {
      fa = a.as<float>()[i] > a.as<float>()[fa] ? i : fa;
      fb = b.as<float>()[i] > b.as<float>()[fb] ? i : fb;
    }
    if (m.top_class_kept) {
      EXPECT_EQ(fa, fb) << m.name << ": the top class changed";
    }
  }
}

// Issue 31: int8 ViT-tiny on XNNPACK was two delegate calls (the patch-embedding convolution
// works in NHWC, the transformer in PyTorch's order, and int8 groups did not mix layouts), and
// the call boundary cost ~5 ms a run at 4 and 16 threads on the 16-core Xeon. Now one call like
// fp32, its int8 layout changes transposing quantized tensors; outputs as before (measured
// 0.024 against eager).
TEST(QuantizerShared, VitTinyInt8IsOneXnnpackDelegate) {
  const std::string dir = testing::shared_dir() + "/models/vit_tiny";
  if (!testing::file_exists(dir + "/model.pt2")) GTEST_SKIP() << "no ../shared";
  exporter::ExportOptions o;
  o.quantize.mode = exporter::QuantizeMode::Int8;
  auto samples = exporter::read_calibration_samples(dir + "/input_0.npy");
  ASSERT_TRUE(samples.ok()) << samples.status();
  o.quantize.calibration = *samples;
  o.partitioners.push_back(std::make_shared<xnnpack::XnnpackPartitioner>());
  auto q = exporter::export_pt2_file(dir + "/model.pt2", o);
  ASSERT_TRUE(q.ok()) << q.status();
  ASSERT_EQ(q->backends.size(), 1u);
  EXPECT_EQ(q->backends[0].delegates, 1);
  EXPECT_TRUE(q->portable_ops.empty());
  EXPECT_GT(q->backends[0].ops["ember_quantized::conv2d.default"], 0);
  EXPECT_GT(q->backends[0].ops["ember_quantized::linear.default"], 0);
  auto input = exporter::read_npy(dir + "/input_0.npy");
  auto want = exporter::read_npy(dir + "/output_0.npy");
  ASSERT_TRUE(input.ok() && want.ok());
  testing::PteRunner r;
  ASSERT_EQ(r.load(q->pte), "");
  ASSERT_EQ(r.run({*input}), "");
  EXPECT_LT(testing::relative_l2(r.output(0), *want), 0.05);
}

}  // namespace
}  // namespace ember
