// Vulkan end to end on real models: export with the Vulkan partitioner (as `ember export
// --backend vulkan [--vulkan-fp16] --vulkan-allow-cpu` does), run on any Vulkan device
// (lavapipe in CI) and compare with PyTorch's float32 outputs.
//   float32: relative L2 <= 1e-3, and the CNNs run (almost) entirely on the delegate.
//   fp16 storage: relative L2 <= 5e-3 (measured on lavapipe: 4.8e-4 .. 9.4e-4), the same ops
//   delegated as in float32, and the weights take at most 0.6x the float32 export's bytes.
// Skips without a Vulkan device (and the fp16 suite without 16-bit storage buffers).
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace exporter {
namespace {

absl::StatusOr<ExportResult> export_vulkan(const std::string& pt2, bool fp16) {
  ExportOptions options;
  vulkan::VulkanPartitionerOptions vo;
  vo.allow_cpu = true;
  vo.fp16 = fp16;
  options.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  return export_pt2_file(pt2, options);
}

// Skips without ../shared or a Vulkan device; allows lavapipe.
class VulkanSharedModelFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    vulkan::set_allow_cpu_device(true);
  }
  // Why this test cannot run here, or "".
  std::string skip_reason() const {
    if (testing::shared_dir().empty()) return "shared/ data not found";
    if (!vulkan::vulkan_backend().is_available()) return "no Vulkan device";
    return "";
  }
};

class VulkanSharedModel : public VulkanSharedModelFixture, public ::testing::WithParamInterface<std::string> {
 protected:
  std::string model_dir() const { return testing::shared_dir() + "/models/" + GetParam(); }
};
using VulkanFp16SharedModel = VulkanSharedModel;

TEST_P(VulkanSharedModel, ExportsDelegatedRunsAndMatchesPyTorch) {
  if (std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = model_dir();
  auto r = export_vulkan(dir + "/model.pt2", false);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->backends.size(), 1u);
  const BackendSummary& v = r->backends[0];
  int portable = 0;
  std::string left;
  for (const auto& [op, n] : r->portable_ops) {
    portable += n;
    left += " " + op + " x" + std::to_string(n);
  }
  std::printf("[vulkan] %s: %d ops in %d delegates, %d ops on portable kernels:%s\n", GetParam().c_str(), v.nodes,
              v.delegates, portable, left.c_str());
  const bool image = GetParam() == "mobilenet_v2" || GetParam() == "mobilenet_v3_small" ||
                     GetParam() == "resnet18" || GetParam() == "vit_tiny";
  if (image) {  // one GPU submission per inference, nothing on the CPU
    EXPECT_EQ(portable, 0) << "the image model should run entirely on the GPU delegate";
    EXPECT_EQ(v.delegates, 1);
  } else {  // token lookups, mask building and GQA repeats stay on the CPU
    EXPECT_GE(v.nodes, 8 * portable) << "most ops should run on the GPU delegate";
    // The CPU-only nodes depend on inputs alone and are moved ahead (cluster_supported_nodes).
    EXPECT_EQ(v.delegates, 1) << "more than one CPU/GPU round trip";
  }
  EXPECT_EQ(r->portable_ops.count("aten::linear.default"), 0u);
  EXPECT_EQ(r->portable_ops.count("aten::scaled_dot_product_attention.default"), 0u);

  const auto t0 = std::chrono::steady_clock::now();
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  ASSERT_NO_FATAL_FAILURE(testing::run_and_compare_with_reference(runner, dir, 1e-3, "vulkan", GetParam()));
  std::printf("[vulkan] %s: load + run %.2f s\n", GetParam().c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

TEST_P(VulkanFp16SharedModel, Fp16ExportRunsAndMatchesPyTorch) {
  if (std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = model_dir();
  if (!vulkan::fp16_supported()) GTEST_SKIP() << "device lacks storageBuffer16BitAccess";
  auto r16 = export_vulkan(dir + "/model.pt2", true);
  ASSERT_TRUE(r16.ok()) << r16.status();
  auto r32 = export_vulkan(dir + "/model.pt2", false);
  ASSERT_TRUE(r32.ok()) << r32.status();
  ASSERT_EQ(r16->backends.size(), 1u);
  EXPECT_EQ(r16->backends[0].nodes, r32->backends[0].nodes) << "fp16 must not change what is delegated";
  std::printf("[vulkan fp16] %s: constants %zu bytes (float32 export: %zu), program %zu bytes (%zu)\n",
              GetParam().c_str(), r16->stats.constant_bytes, r32->stats.constant_bytes, r16->pte.size(),
              r32->pte.size());
  // Weights the delegates read are fp16; weights also read by portable ops stay float32 too.
  EXPECT_LE(r16->stats.constant_bytes, r32->stats.constant_bytes * 6 / 10);

  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r16->pte), "");
  // fp16 storage alone costs accuracy: PyTorch with every tensor rounded to fp16 (float32
  // math; tools/models/fp16_storage_error.py) is 7e-4..1e-3 from the float32 reference on
  // these models but 1.8e-2 on mobilenet_v2, whose shared weights were regenerated with real
  // BatchNorm statistics (its activations now span a wide range). Ember must do as well.
  const double tolerance = GetParam() == "mobilenet_v2" ? 1.8e-2 : 5e-3;
  ASSERT_NO_FATAL_FAILURE(testing::run_and_compare_with_reference(runner, dir, tolerance, "vulkan fp16", GetParam()));
}

// Dynamic sizes on the GPU: dynamic_mlp (batch 1..64) at batches 1, 7, 64, 4, 1 on one loaded
// program against the portable kernels (a variant recorded per new batch, reused after).
TEST_F(VulkanSharedModelFixture, DynamicMlpMatchesPortableAtEveryBatch) {
  if (std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string path = testing::shared_dir() + "/models/dynamic_mlp/model.pt2";
  auto del = export_vulkan(path, false);
  ASSERT_TRUE(del.ok()) << del.status();
  ASSERT_EQ(del->backends.size(), 1u);
  EXPECT_EQ(del->backends[0].delegates, 1);
  EXPECT_TRUE(del->portable_ops.empty()) << "dynamic_mlp should run on the GPU alone";
  auto portable = export_pt2_file(path, ExportOptions());
  ASSERT_TRUE(portable.ok()) << portable.status();
  testing::expect_same_outputs_at_batches(portable->pte, del->pte, {1, 7, 64, 4, 1, 64}, 32, 1e-5);
}

// The KV-cache decoder as one delegate (cache on the GPU): an 8-token prefill, then one token
// at position 8 on the same loaded program, against PyTorch's logits for both calls.
TEST_F(VulkanSharedModelFixture, KvCacheDecoderPrefillThenStepMatchesPyTorch) {
  if (std::string why = skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = testing::shared_dir() + "/models/tiny_llama_kv";
  for (bool fp16 : {false, true}) {
    if (fp16 && !vulkan::fp16_supported()) continue;
    auto r = export_vulkan(dir + "/model.pt2", fp16);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->backends.size(), 1u);
    EXPECT_EQ(r->backends[0].delegates, 1);
    testing::PteRunner runner;
    ASSERT_EQ(runner.load(r->pte), "");
    const double tolerance = fp16 ? 5e-3 : 1e-5;
    for (const char* call : {"", "step_"}) {
      std::vector<NpyArray> in = testing::read_npy_series(dir, std::string(call) + "input_");
      std::vector<NpyArray> want = testing::read_npy_series(dir, std::string(call) + "output_");
      ASSERT_EQ(in.size(), 2u);
      ASSERT_EQ(runner.run(in), "") << call;
      NpyArray got = runner.output(0);
      EXPECT_EQ(got.shape, want[0].shape) << call;
      const double err = testing::relative_l2(got, want[0]);
      std::printf("[vulkan%s] tiny_llama_kv %scall: relative L2 %.3g\n", fp16 ? " fp16" : "", call, err);
      EXPECT_LE(err, tolerance) << (fp16 ? "fp16 " : "") << call;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, VulkanSharedModel,
                         ::testing::Values("mobilenet_v2", "mobilenet_v3_small", "resnet18", "vit_tiny", "bert_tiny",
                                           "gpt2_tiny", "tiny_llama"));
INSTANTIATE_TEST_SUITE_P(Models, VulkanFp16SharedModel,
                         ::testing::Values("mobilenet_v2", "bert_tiny", "resnet18", "vit_tiny", "tiny_llama"));

}  // namespace
}  // namespace exporter
}  // namespace ember
