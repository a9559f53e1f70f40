// Helpers for the end-to-end tests over shared/models/<name>/ (model.pt2, input_<i>.npy,
// output_<i>.npy): reading a numbered .npy series and checking a run against the reference
// outputs. Used by test/exporter/shared_models_test.cc and the delegate variants in
// test/delegates/.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <string>
#include <vector>

#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/exporter/pte_runner.h"

namespace ember {
namespace testing {

inline bool file_exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// dir/<prefix>0.npy, dir/<prefix>1.npy, ... up to the first missing one (a file that does
// not parse is a test failure and is left out).
inline std::vector<exporter::NpyArray> read_npy_series(const std::string& dir, const std::string& prefix) {
  std::vector<exporter::NpyArray> out;
  for (int i = 0; file_exists(dir + "/" + prefix + std::to_string(i) + ".npy"); ++i) {
    auto a = exporter::read_npy(dir + "/" + prefix + std::to_string(i) + ".npy");
    EXPECT_TRUE(a.ok()) << a.status();
    if (a.ok()) out.push_back(std::move(*a));
  }
  return out;
}

// Runs `runner` (loaded) on dir/input_<i>.npy and checks every output against
// dir/output_<i>.npy: same shape and relative L2 <= tolerance. With a `tag`, prints each
// output's error as "[tag] <model> output <i>: relative L2 <e>". The inputs are handed back
// through `inputs_out`. Fatal failures return early: call inside ASSERT_NO_FATAL_FAILURE.
inline void run_and_compare_with_reference(PteRunner& runner, const std::string& dir, double tolerance,
                                           const char* tag, const std::string& model,
                                           std::vector<exporter::NpyArray>* inputs_out = nullptr) {
  std::vector<exporter::NpyArray> inputs = read_npy_series(dir, "input_");
  std::vector<exporter::NpyArray> expected = read_npy_series(dir, "output_");
  ASSERT_FALSE(inputs.empty());
  ASSERT_EQ(runner.run(inputs), "");
  for (size_t i = 0; i < expected.size(); ++i) {
    exporter::NpyArray got = runner.output(i);
    EXPECT_EQ(got.shape, expected[i].shape) << "output " << i;
    const double err = relative_l2(got, expected[i]);
    if (tag != nullptr) std::printf("[%s] %s output %zu: relative L2 %.3g\n", tag, model.c_str(), i, err);
    EXPECT_LE(err, tolerance) << "output " << i;
  }
  if (inputs_out != nullptr) *inputs_out = std::move(inputs);
}

// Loads the `portable` and `delegated` programs (one input [B, features], B dynamic) and runs
// both at each batch in turn, on one loaded method each, with random inputs: the delegate's
// output has the portable one's shape and is within `tol` relative L2 of it.
inline void expect_same_outputs_at_batches(const std::vector<uint8_t>& portable, const std::vector<uint8_t>& delegated,
                                           const std::vector<int64_t>& batches, int64_t features, double tol) {
  PteRunner a, b;
  ASSERT_EQ(a.load(portable), "");
  ASSERT_EQ(b.load(delegated), "");
  std::mt19937 rng(7);
  for (int64_t batch : batches) {
    exporter::NpyArray x = random_npy(rng, {batch, features});
    ASSERT_EQ(a.run({x}), "");
    ASSERT_EQ(b.run({x}), "") << "batch " << batch;
    exporter::NpyArray want = a.output(0), got = b.output(0);
    EXPECT_EQ(got.shape, want.shape) << "batch " << batch;
    EXPECT_LE(relative_l2(got, want), tol) << "batch " << batch;
  }
}

}  // namespace testing
}  // namespace ember
