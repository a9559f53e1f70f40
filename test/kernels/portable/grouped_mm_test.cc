// Grouped matrix multiply of MoE experts (kernels/portable/linalg/grouped_mm.cc), as
// aten::_grouped_mm and transformers::grouped_mm_fallback, against a direct computation.
#include <gtest/gtest.h>

#include <random>

#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

// out[r] = x[r] @ w[g(r)] (+ bias[g(r)]), rows past offs' last entry zero.
std::vector<float> reference(const float* x, const float* w, const std::vector<int32_t>& offs, const float* bias,
                             int64_t rows, int64_t k, int64_t n) {
  std::vector<float> out(size_t(rows * n), 0.0f);
  int64_t start = 0;
  for (size_t g = 0; g < offs.size(); ++g) {
    for (int64_t r = start; r < offs[g]; ++r) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = bias ? bias[g * size_t(n) + size_t(j)] : 0.0;
        for (int64_t p = 0; p < k; ++p) acc += double(x[r * k + p]) * double(w[(int64_t(g) * k + p) * n + j]);
        out[size_t(r * n + j)] = float(acc);
      }
    }
    start = offs[g];
  }
  return out;
}

TEST(GroupedMm, BothNamesMatchTheDirectProductIncludingEmptyGroupsAndUnroutedRows) {
  const int64_t rows = 9, k = 5, n = 3, groups = 4;
  std::mt19937 rng(3);
  TestTensor x(ScalarType::Float32, {rows, k}), w(ScalarType::Float32, {groups, k, n});
  TestTensor bias(ScalarType::Float32, {groups, n});
  x.fill_random(rng);
  w.fill_random(rng);
  bias.fill_random(rng);
  // Group 1 is empty; rows 7 and 8 belong to no group.
  const std::vector<int32_t> ends = {3, 3, 5, 7};
  TestTensor offs(ScalarType::Int32, {groups});
  for (int64_t g = 0; g < groups; ++g) offs.data<int32_t>()[g] = ends[size_t(g)];
  for (const char* op : {"aten::_grouped_mm.default", "transformers::grouped_mm_fallback.default"}) {
    SCOPED_TRACE(op);
    const bool aten = op[0] == 'a';
    KernelRunner r;
    TestTensor out(ScalarType::Float32, {rows, n});
    out.fill(42.0f);
    const Error e = aten ? r.run(op, {r.tensor(x), r.tensor(w), r.tensor(offs), r.tensor(bias), r.none(), r.tensor(out)})
                         : r.run(op, {r.tensor(x), r.tensor(w), r.tensor(offs), r.tensor(out)});
    ASSERT_EQ(e, Error::Ok);
    const std::vector<float> want =
        reference(x.data<float>(), w.data<float>(), ends, aten ? bias.data<float>() : nullptr, rows, k, n);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.data<float>()[i], want[i], 1e-5) << i;
    EXPECT_TRUE(out.guard_ok());
  }
}

// float32 runs on the shared GEMM; other floating dtypes on the direct loop.
TEST(GroupedMm, Float64TakesTheDirectLoop) {
  const int64_t rows = 6, k = 4, n = 3, groups = 2;
  std::mt19937 rng(5);
  TestTensor xf(ScalarType::Float32, {rows, k}), wf(ScalarType::Float32, {groups, k, n});
  xf.fill_random(rng);
  wf.fill_random(rng);
  TestTensor x(ScalarType::Float64, {rows, k}), w(ScalarType::Float64, {groups, k, n}), out(ScalarType::Float64, {rows, n});
  for (int64_t i = 0; i < rows * k; ++i) x.data<double>()[i] = xf.data<float>()[i];
  for (int64_t i = 0; i < groups * k * n; ++i) w.data<double>()[i] = wf.data<float>()[i];
  const std::vector<int32_t> ends = {2, 5};  // row 5 belongs to no group
  TestTensor offs(ScalarType::Int32, {groups});
  offs.data<int32_t>()[0] = ends[0];
  offs.data<int32_t>()[1] = ends[1];
  KernelRunner r;
  ASSERT_EQ(r.run("transformers::grouped_mm_fallback.default", {r.tensor(x), r.tensor(w), r.tensor(offs), r.tensor(out)}),
            Error::Ok);
  const std::vector<float> want = reference(xf.data<float>(), wf.data<float>(), ends, nullptr, rows, k, n);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.data<double>()[i], want[i], 1e-6) << i;
  EXPECT_TRUE(out.guard_ok());
}

TEST(GroupedMm, BadOffsetsAndShapesAreErrors) {
  std::mt19937 rng(4);
  TestTensor x(ScalarType::Float32, {4, 2}), w(ScalarType::Float32, {2, 2, 3}), out(ScalarType::Float32, {4, 3});
  x.fill_random(rng);
  w.fill_random(rng);
  const char* op = "transformers::grouped_mm_fallback.default";
  for (const std::vector<int32_t>& ends : {std::vector<int32_t>{3, 2}, std::vector<int32_t>{2, 5},
                                           std::vector<int32_t>{-1, 2}}) {
    TestTensor offs(ScalarType::Int32, {2});
    offs.data<int32_t>()[0] = ends[0];
    offs.data<int32_t>()[1] = ends[1];
    KernelRunner r;
    EXPECT_EQ(r.run(op, {r.tensor(x), r.tensor(w), r.tensor(offs), r.tensor(out)}), Error::InvalidArgument)
        << ends[0] << "," << ends[1];
  }
  TestTensor offs3(ScalarType::Int32, {3}), offs64(ScalarType::Int64, {2}), w_bad_k(ScalarType::Float32, {2, 3, 3});
  KernelRunner r;
  EXPECT_EQ(r.run(op, {r.tensor(x), r.tensor(w), r.tensor(offs3), r.tensor(out)}), Error::InvalidArgument);
  EXPECT_EQ(r.run(op, {r.tensor(x), r.tensor(w), r.tensor(offs64), r.tensor(out)}), Error::InvalidArgument);
  TestTensor offs(ScalarType::Int32, {2});
  EXPECT_EQ(r.run(op, {r.tensor(x), r.tensor(w_bad_k), r.tensor(offs), r.tensor(out)}), Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::_grouped_mm.default", {r.tensor(x), r.tensor(w), r.none(), r.none(), r.none(), r.tensor(out)}),
            Error::InvalidArgument)
      << "the form without offs is not supported";
}

}  // namespace
}  // namespace testing
}  // namespace ember
