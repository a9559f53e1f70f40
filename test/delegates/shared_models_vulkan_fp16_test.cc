// Vulkan fp16 end to end on real models: export with the Vulkan partitioner in fp16 mode (as
// `ember export --backend vulkan --vulkan-fp16 --vulkan-allow-cpu` does), run on any Vulkan
// device with 16-bit storage buffers (lavapipe in CI) and compare with PyTorch's float32
// outputs. Tolerance: relative L2 <= 5e-3 (measured on lavapipe: 4.8e-4 .. 9.4e-4, see the
// printed numbers and docs/architecture.md). Also checks that the fp16 program's weights take about half the
// bytes of the float32 export. Skips without a Vulkan device or without fp16 support.
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>

#include "delegates/vulkan/exporter/vulkan_partitioner.h"
#include "delegates/vulkan/runtime/vulkan_backend.h"
#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"

namespace ember {
namespace exporter {
namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::vector<NpyArray> read_all(const std::string& dir, const std::string& prefix) {
  std::vector<NpyArray> out;
  for (int i = 0; exists(dir + "/" + prefix + std::to_string(i) + ".npy"); ++i) {
    auto a = read_npy(dir + "/" + prefix + std::to_string(i) + ".npy");
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok()) out.push_back(std::move(*a));
  }
  return out;
}

absl::StatusOr<ExportResult> export_vulkan(const std::string& pt2, bool fp16) {
  ExportOptions options;
  vulkan::VulkanPartitionerOptions vo;
  vo.allow_cpu = true;
  vo.fp16 = fp16;
  options.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  return export_pt2_file(pt2, options);
}

class VulkanFp16SharedModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    vulkan::set_allow_cpu_device(true);
  }
};

TEST_P(VulkanFp16SharedModel, Fp16ExportRunsAndMatchesPyTorch) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  if (!vulkan::vulkan_backend().is_available()) GTEST_SKIP() << "no Vulkan device";
  if (!vulkan::fp16_supported()) GTEST_SKIP() << "device lacks storageBuffer16BitAccess";
  const std::string dir = shared + "/models/" + GetParam();
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
  std::vector<NpyArray> inputs = read_all(dir, "input_");
  std::vector<NpyArray> expected = read_all(dir, "output_");
  ASSERT_FALSE(inputs.empty());
  ASSERT_FALSE(expected.empty());
  ASSERT_EQ(runner.run(inputs), "");
  for (size_t i = 0; i < expected.size(); ++i) {
    NpyArray got = runner.output(i);
    EXPECT_EQ(got.shape, expected[i].shape) << "output " << i;
    const double err = testing::relative_l2(got, expected[i]);
    std::printf("[vulkan fp16] %s output %zu: relative L2 %.3g\n", GetParam().c_str(), i, err);
    EXPECT_LE(err, 5e-3) << "output " << i;
    EXPECT_GT(err, 0.0) << "output " << i << " matches float32 exactly: fp16 storage was not used?";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, VulkanFp16SharedModel,
                         ::testing::Values("mobilenet_v2", "bert_tiny", "resnet18", "vit_tiny", "tiny_llama"));

}  // namespace
}  // namespace exporter
}  // namespace ember
