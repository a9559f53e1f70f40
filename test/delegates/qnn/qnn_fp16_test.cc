// fp16 graphs on the HTP (--backend-option qnn.precision=fp16): float programs, no quantization,
// compiled with float32 tensors and QNN's fp16 precision config. The Fashion CNN and
// MobileNetV2 must go onto QNN whole, in one delegate, record "fp16" in the blob, and stay
// within fp16's tolerance of the portable float program (relative L2 2e-3, what the GPU
// delegate's fp16 path is held to). On the x86-64 simulator the results come out equal to fp32
// (measured: 2e-7), so this checks the lowering and the float layouts; a device computes in fp16.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "delegates/qnn/exporter/qnn_partitioner.h"
#include "delegates/qnn/qnn_blob_generated.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/delegates/qnn/qnn_test_util.h"
#include "test/exporter/pte_runner.h"
#include "test/quant/quant_test_data.h"
#include "test/support/repo_path.h"

namespace ember {
namespace {

using testing::repo_path;

exporter::ExportOptions fp16_options() {
  exporter::ExportOptions o;
  qnn::QnnPartitionerOptions q;
  q.target.fp16 = true;
  o.partitioners.push_back(std::make_shared<qnn::QnnPartitioner>(q));
  return o;
}

std::string blob_precision(const std::vector<uint8_t>& pte) {
  const qnn::fb::Blob* b = testing::find_qnn_blob(pte);
  return b != nullptr && b->precision() != nullptr ? b->precision()->str() : "";
}

double rel_l2(const exporter::NpyArray& a, const exporter::NpyArray& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.data.size() / 4; ++i) {
    const double d = double(a.as<float>()[i]) - ref.as<float>()[i];
    num += d * d;
    den += double(ref.as<float>()[i]) * ref.as<float>()[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

// Exports `model` float (portable) and fp16 on QNN; the QNN one must be one delegate, whole.
void export_both(const std::string& model, testing::PteRunner* portable, testing::PteRunner* npu) {
  auto fl = exporter::export_pt2_file(repo_path("examples/models/" + model + ".pt2"), exporter::ExportOptions());
  ASSERT_TRUE(fl.ok()) << fl.status();
  auto h = exporter::export_pt2_file(repo_path("examples/models/" + model + ".pt2"), fp16_options());
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->backends.size(), 1u);
  EXPECT_EQ(h->backends[0].delegates, 1);
  EXPECT_TRUE(h->portable_ops.empty());
  EXPECT_GT(h->backends[0].ops["aten::conv2d.default"], 0);
  EXPECT_EQ(blob_precision(h->pte), "fp16");
  ASSERT_EQ(portable->load(fl->pte), "");
  ASSERT_EQ(npu->load(h->pte), "");
}

TEST(QnnFp16, FashionCnnWholeAndWithinFp16Tolerance) {
  EMBER_REQUIRE_QNN();
  testing::PteRunner ref, npu;
  ASSERT_NO_FATAL_FAILURE(export_both("fashion_cnn", &ref, &npu));
  const exporter::NpyArray images = testing::load_repo_npy("test/quant/data/images.npy");
  double worst = 0;
  int differ = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const exporter::NpyArray x = testing::fashion_image(images, i);
    ASSERT_EQ(ref.run({x}), "");
    ASSERT_EQ(npu.run({x}), "");
    const exporter::NpyArray a = npu.output(0), b = ref.output(0);
    worst = std::max(worst, rel_l2(a, b));
    int pa = 0, pb = 0;
    for (int c = 1; c < 10; ++c) {
      if (a.as<float>()[c] > a.as<float>()[pa]) pa = c;
      if (b.as<float>()[c] > b.as<float>()[pb]) pb = c;
    }
    differ += pa != pb;
  }
  std::printf("[fashion_cnn fp16 on qnn] worst logits rel. L2 to float %.2e over 20 images, %d predictions differ\n",
              worst, differ);
  EXPECT_LE(worst, 2e-3);
  EXPECT_EQ(differ, 0);
}

TEST(QnnFp16, MobileNetV2WholeAndWithinFp16Tolerance) {
  EMBER_REQUIRE_QNN();
  testing::PteRunner ref, npu;
  ASSERT_NO_FATAL_FAILURE(export_both("mobilenet_v2", &ref, &npu));
  exporter::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {1, 3, 224, 224};
  x.data.resize(3 * 224 * 224 * 4);
  float* p = reinterpret_cast<float*>(x.data.data());
  for (int i = 0; i < 3 * 224 * 224; ++i) p[i] = std::sin(0.37f * float(i)) * 1.5f;  // fixed, image-like range
  ASSERT_EQ(ref.run({x}), "");
  ASSERT_EQ(npu.run({x}), "");
  const double e = rel_l2(npu.output(0), ref.output(0));
  std::printf("[mobilenet_v2 fp16 on qnn] logits rel. L2 to float %.2e\n", e);
  EXPECT_LE(e, 2e-3);
}

// PT2E's dynamic quantization (int8 weights, activations quantized per call) maps to an fp16
// graph: the int8 weights dequantized at export, the per-call activation quantization an identity
// (the HTP computes in fp16 instead). The whole program is one delegate, and its logits are no
// further from the float model's than the portable dynamic int8 program's.
TEST(QnnFp16, DynamicallyQuantizedProgramMapsWhole) {
  EMBER_REQUIRE_QNN();
  const std::string dynamic = repo_path("examples/models/fashion_cnn_dynamic_pt2e.pt2");
  auto h = exporter::export_pt2_file(dynamic, fp16_options());
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->backends.size(), 1u);
  EXPECT_EQ(h->backends[0].delegates, 1);
  EXPECT_TRUE(h->portable_ops.empty());
  EXPECT_EQ(h->backends[0].ops["ember_quantized::linear_weight_only.default"], 2);
  EXPECT_EQ(h->backends[0].ops["quantized_decomposed::choose_qparams.tensor"], 2);
  auto cpu = exporter::export_pt2_file(dynamic, exporter::ExportOptions());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto fl = exporter::export_pt2_file(repo_path("examples/models/fashion_cnn.pt2"), exporter::ExportOptions());
  ASSERT_TRUE(fl.ok()) << fl.status();
  testing::PteRunner npu, portable, ref;
  ASSERT_EQ(npu.load(h->pte), "");
  ASSERT_EQ(portable.load(cpu->pte), "");
  ASSERT_EQ(ref.load(fl->pte), "");
  const exporter::NpyArray images = testing::load_repo_npy("test/quant/data/images.npy");
  double e_npu = 0, e_cpu = 0;
  for (int64_t i = 0; i < 20; ++i) {
    const exporter::NpyArray x = testing::fashion_image(images, i);
    ASSERT_EQ(npu.run({x}), "");
    ASSERT_EQ(portable.run({x}), "");
    ASSERT_EQ(ref.run({x}), "");
    e_npu += rel_l2(npu.output(0), ref.output(0)) / 20;
    e_cpu += rel_l2(portable.output(0), ref.output(0)) / 20;
  }
  std::printf("[fashion_cnn_dynamic_pt2e fp16 on qnn] mean logits rel. L2 to the float model %.2e (portable dynamic "
              "int8 %.2e)\n",
              e_npu, e_cpu);
  EXPECT_LE(e_npu, e_cpu * 1.1);
}

}  // namespace
}  // namespace ember
