// End to end: exports every model in shared/models with the portable kernels linked, runs
// it with the runtime and compares with PyTorch's outputs (relative L2 <= 1e-4).
#include <dirent.h>

#include <cstdio>

#include "exporter/exporter.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"
#include "test/exporter/shared_dir.h"
#include "test/exporter/shared_models.h"

namespace ember {
namespace exporter {
namespace {

constexpr double kTolerance = 1e-4;

class SharedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedModel, ExportsRunsAndMatchesPyTorch) {
  std::string shared = testing::shared_dir();
  if (shared.empty()) GTEST_SKIP() << "shared/ data not found";
  std::string dir = shared + "/models/" + GetParam();
  auto r = export_pt2_file(dir + "/model.pt2", ExportOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  std::printf("[plan] %s: arena %zu bytes (shared %zu + inputs/state %zu), lower bound %zu, %s\n",
              GetParam().c_str(), r->plan.arena_size, r->plan.shared_size, r->plan.fixed_size, r->plan.lower_bound,
              r->plan.strategy.c_str());
  EXPECT_LE(r->plan.arena_size, r->plan.lower_bound * 102 / 100) << "memory plan over 1.02x its lower bound";
  testing::PteRunner runner;
  ASSERT_EQ(runner.load(r->pte), "");
  std::vector<NpyArray> inputs;
  ASSERT_NO_FATAL_FAILURE(
      testing::run_and_compare_with_reference(runner, dir, kTolerance, nullptr, GetParam(), &inputs));
  if (GetParam() == "tiny_llama_kv") {  // second call carries the KV cache over
    std::vector<NpyArray> step_in = testing::read_npy_series(dir, "step_input_");
    std::vector<NpyArray> step_out = testing::read_npy_series(dir, "step_output_");
    ASSERT_EQ(step_out.size(), 1u);
    ASSERT_EQ(runner.run(step_in), "");
    NpyArray got = runner.output(0);
    EXPECT_EQ(got.shape, step_out[0].shape);
    EXPECT_LE(testing::relative_l2(got, step_out[0]), kTolerance);
  }
  if (GetParam() == "dynamic_mlp") {
    // Every batch size 1..64: shape and consistency with rows of a full 64-row run.
    const NpyArray& x = inputs[0];
    int64_t rows = x.shape[0], cols = x.shape[1];
    NpyArray full = x;
    full.shape[0] = 64;
    full.data.resize(64 * cols * 4);
    float* f = reinterpret_cast<float*>(full.data.data());
    for (int64_t r2 = 0; r2 < 64; ++r2) {
      for (int64_t c = 0; c < cols; ++c) f[r2 * cols + c] = x.as<float>()[(r2 % rows) * cols + c] * (1.0f + 0.01f * r2);
    }
    ASSERT_EQ(runner.run({full}), "");
    NpyArray full_out = runner.output(0);
    ASSERT_EQ(full_out.shape[0], 64);
    int64_t out_cols = full_out.numel() / 64;
    for (int64_t b = 1; b <= 64; ++b) {
      NpyArray part = full;
      part.shape[0] = b;
      part.data.resize(static_cast<size_t>(b * cols * 4));
      ASSERT_EQ(runner.run({part}), "") << "batch " << b;
      NpyArray out = runner.output(0);
      ASSERT_EQ(out.shape[0], b);
      NpyArray ref = full_out;
      ref.shape[0] = b;
      ref.data.resize(static_cast<size_t>(b * out_cols * 4));
      EXPECT_LE(testing::relative_l2(out, ref), 1e-6) << "batch " << b;
    }
  }
}

std::vector<std::string> models() {
  std::vector<std::string> out;
  std::string shared = testing::shared_dir();
  DIR* d = shared.empty() ? nullptr : opendir((shared + "/models").c_str());
  if (d == nullptr) return {"small_cnn"};
  while (dirent* e = readdir(d)) if (e->d_name[0] != '.') out.push_back(e->d_name);
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Models, SharedModel, ::testing::ValuesIn(models()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace exporter
}  // namespace ember
