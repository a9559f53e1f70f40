// Vulkan end to end on real models: export with the Vulkan partitioner (as `ember export
// --backend vulkan --vulkan-allow-cpu` does), run on any Vulkan device (lavapipe in CI) and
// compare with PyTorch (relative L2 <= 1e-3). Skips when there is no Vulkan device.
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
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

class VulkanSharedModel : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    setenv("EMBER_VULKAN_ALLOW_CPU", "1", 1);
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    vulkan::set_allow_cpu_device(true);
  }
};

TEST_P(VulkanSharedModel, ExportsDelegatedRunsAndMatchesPyTorch) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  if (!vulkan::vulkan_backend().is_available()) GTEST_SKIP() << "no Vulkan device";
  const std::string dir = shared + "/models/" + GetParam();
  ExportOptions options;
  vulkan::VulkanPartitionerOptions vo;
  vo.allow_cpu = true;
  options.partitioners.push_back(std::make_shared<vulkan::VulkanPartitioner>(vo));
  auto r = export_pt2_file(dir + "/model.pt2", options);
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
  const bool cnn = GetParam() == "mobilenet_v2" || GetParam() == "resnet18";
  if (cnn) {
    EXPECT_GE(v.nodes, 10 * portable) << "the CNN should run (almost) entirely on the GPU delegate";
  } else {
    EXPECT_GE(v.nodes, portable) << "most ops should run on the GPU delegate";
  }
  EXPECT_EQ(r->portable_ops.count("aten::linear.default"), 0u);

  const auto t0 = std::chrono::steady_clock::now();
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  std::vector<NpyArray> inputs = read_all(dir, "input_");
  std::vector<NpyArray> expected = read_all(dir, "output_");
  ASSERT_FALSE(inputs.empty());
  ASSERT_EQ(runner.run(inputs), "");
  for (size_t i = 0; i < expected.size(); ++i) {
    NpyArray got = runner.output(i);
    EXPECT_EQ(got.shape, expected[i].shape) << "output " << i;
    const double err = testing::relative_l2(got, expected[i]);
    std::printf("[vulkan] %s output %zu: relative L2 %.3g\n", GetParam().c_str(), i, err);
    EXPECT_LE(err, 1e-3) << "output " << i;
  }
  std::printf("[vulkan] %s: load + run %.2f s\n", GetParam().c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

INSTANTIATE_TEST_SUITE_P(Models, VulkanSharedModel,
                         ::testing::Values("mobilenet_v2", "resnet18", "vit_tiny", "bert_tiny", "tiny_llama"));

}  // namespace
}  // namespace exporter
}  // namespace ember
