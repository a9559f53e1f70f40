// cdist / _cdist_forward and pdist / _pdist_forward against distances computed by hand.
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

// x1 rows (0,0), (1,2); x2 rows (0,0), (3,4), (1,0).
std::vector<float> cdist_2x3(double p, int64_t mode, Error* status = nullptr, const char* op = "aten::cdist.default") {
  KernelRunner r;
  TestTensor x1(F, {1, 2, 2}), x2(F, {1, 3, 2}), out(F, {1, 2, 3});
  x1.set({0, 0, 1, 2});
  x2.set({0, 0, 3, 4, 1, 0});
  Error e = r.run(op, {r.tensor(x1), r.tensor(x2), r.d(p), mode < 0 ? r.none() : r.i(mode), r.tensor(out)});
  if (status != nullptr) *status = e;
  EXPECT_EQ(e, Error::Ok) << r.message();
  return out.values();
}

TEST(Cdist, PNorms) {
  expect_close(cdist_2x3(2.0, 2), {0, 5, 1, std::sqrt(5.0f), std::sqrt(8.0f), 2}, 1e-6f, "p=2");
  expect_close(cdist_2x3(1.0, -1), {0, 7, 1, 3, 4, 2}, 1e-6f, "p=1");
  expect_close(cdist_2x3(0.0, -1), {0, 2, 1, 2, 2, 1}, 0, "p=0 counts differing coordinates");
  expect_close(cdist_2x3(INFINITY, -1), {0, 4, 1, 2, 2, 2}, 0, "p=inf");
  expect_close(cdist_2x3(3.0, -1), {0, std::cbrt(91.0f), 1, std::cbrt(9.0f), std::cbrt(16.0f), 2}, 1e-5f, "p=3");
  // The matrix-product form ATen uses for compute_mode 1 agrees within rounding.
  expect_close(cdist_2x3(2.0, 1), {0, 5, 1, std::sqrt(5.0f), std::sqrt(8.0f), 2}, 1e-5f, "p=2 mm");
  expect_close(cdist_2x3(1.0, -1, nullptr, "aten::_cdist_forward.default"), {0, 7, 1, 3, 4, 2}, 1e-6f, "_cdist_forward");
}

TEST(Cdist, BroadcastsBatchDims) {
  KernelRunner r;
  TestTensor x1(F, {2, 1, 1}), x2(F, {1, 2, 1}), out(F, {2, 1, 2});
  x1.set({1, 2});
  x2.set({0, 5});
  ASSERT_EQ(r.run("aten::cdist.default", {r.tensor(x1), r.tensor(x2), r.d(2.0), r.none(), r.tensor(out)}), Error::Ok)
      << r.message();
  expect_close(out.values(), {1, 4, 2, 3}, 1e-6f);
}

TEST(Cdist, Float64) {
  KernelRunner r;
  TestTensor x1(ScalarType::Float64, {1, 2}), x2(ScalarType::Float64, {1, 2}), out(ScalarType::Float64, {1, 1});
  x1.data<double>()[0] = 1;
  x1.data<double>()[1] = 1;
  x2.data<double>()[0] = 4;
  x2.data<double>()[1] = 5;
  ASSERT_EQ(r.run("aten::cdist.default", {r.tensor(x1), r.tensor(x2), r.d(2.0), r.none(), r.tensor(out)}), Error::Ok);
  EXPECT_DOUBLE_EQ(out.data<double>()[0], 5.0);
}

TEST(Cdist, RejectsBadArguments) {
  KernelRunner r;
  TestTensor x1(F, {2, 2}), x2(F, {3, 2}), x3(F, {3, 3}), out(F, {2, 3});
  TestTensor xi(ScalarType::Int64, {2, 2}), xi2(ScalarType::Int64, {3, 2}), outi(ScalarType::Int64, {2, 3});
  EXPECT_EQ(r.run("aten::cdist.default", {r.tensor(x1), r.tensor(x2), r.d(-1.0), r.none(), r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_NE(r.message().find("non-negative"), std::string::npos) << r.message();
  EXPECT_EQ(r.run("aten::cdist.default", {r.tensor(x1), r.tensor(x3), r.d(2.0), r.none(), r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::cdist.default", {r.tensor(xi), r.tensor(xi2), r.d(2.0), r.none(), r.tensor(outi)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::cdist.default", {r.tensor(x1), r.tensor(x2), r.d(2.0), r.i(3), r.tensor(out)}),
            Error::InvalidArgument);
}

TEST(Pdist, UpperTriangleInRowMajorOrder) {
  // Rows (0,0), (3,4), (0,1): pairs (0,1), (0,2), (1,2).
  for (const char* op : {"aten::pdist.default", "aten::_pdist_forward.default"}) {
    KernelRunner r;
    TestTensor x(F, {3, 2}), out(F, {3}), out_inf(F, {3}), out0(F, {3});
    x.set({0, 0, 3, 4, 0, 1});
    ASSERT_EQ(r.run(op, {r.tensor(x), r.d(2.0), r.tensor(out)}), Error::Ok) << r.message();
    expect_close(out.values(), {5, 1, std::sqrt(18.0f)}, 1e-6f, op);
    ASSERT_EQ(r.run(op, {r.tensor(x), r.d(INFINITY), r.tensor(out_inf)}), Error::Ok);
    expect_close(out_inf.values(), {4, 1, 3}, 0, op);
    ASSERT_EQ(r.run(op, {r.tensor(x), r.d(0.0), r.tensor(out0)}), Error::Ok);
    expect_close(out0.values(), {2, 1, 2}, 0, op);
  }
  KernelRunner r;
  TestTensor one(F, {1, 1}), empty(F, {0});
  EXPECT_EQ(r.run("aten::pdist.default", {r.tensor(one), r.d(2.0), r.tensor(empty)}), Error::Ok) << r.message();
  TestTensor v(F, {3}), out(F, {3});
  EXPECT_EQ(r.run("aten::pdist.default", {r.tensor(v), r.d(2.0), r.tensor(out)}), Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
