// Reductions and scans: dims lists, negative dims, keepdim, dtypes, indices, errors.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_test_util.h"

namespace ember {
namespace testing {
namespace {

using V = std::vector<double>;
using S = std::vector<int64_t>;
constexpr ScalarType F32 = ScalarType::Float32;
constexpr ScalarType I64 = ScalarType::Int64;

TEST(Reduction, SumDimsKeepdim) {
  KernelTest k;
  EValue* x = k.f({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* out = k.out(F32, {2, 1});
  ASSERT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({-1}), k.b(true), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.shape(out), (S{2, 1}));
  EXPECT_EQ(k.vals(out), (V{6, 15}));
  EValue* o2 = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({0}), k.b(false), k.none(), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{5, 7, 9}));
  EValue* o3 = k.out(F32, {});
  ASSERT_EQ(k.run("aten::sum.dim_IntList", {x, k.none(), k.b(false), k.none(), o3}), Error::Ok);
  EXPECT_EQ(k.vals(o3), (V{21}));
  ASSERT_EQ(k.run("aten::sum.default", {x, k.none(), o3}), Error::Ok);
  EXPECT_EQ(k.vals(o3), (V{21}));
}

TEST(Reduction, SumBoolAndIntGivesInt64) {
  KernelTest k;
  EValue* out = k.out(I64, {});
  ASSERT_EQ(k.run("aten::sum.default", {k.bt({4}, {1, 0, 1, 1}), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{3}));
}

TEST(Reduction, MeanMultipleDims) {
  KernelTest k;
  EValue* x = k.f({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EValue* out = k.out(F32, {2, 1, 1});
  ASSERT_EQ(k.run("aten::mean.dim", {x, k.ilist({-1, -2}), k.b(true), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{2.5, 6.5}));
  EValue* o2 = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::mean.dim", {x, k.ilist({0, 2}), k.b(false), k.none(), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{3.5, 5.5}));
  EValue* o3 = k.out(F32, {});
  ASSERT_EQ(k.run("aten::mean.default", {x, k.none(), o3}), Error::Ok);
  EXPECT_EQ(k.vals(o3), (V{4.5}));
}

TEST(Reduction, Errors) {
  KernelTest k;
  EValue* x = k.f({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({2}), k.b(false), k.none(), k.out(F32, {2})}),
            Error::InvalidArgument);
  EXPECT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({1, -1}), k.b(false), k.none(), k.out(F32, {2})}),
            Error::InvalidArgument);
  EXPECT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({1}), k.b(false), k.out(F32, {2})}),
            Error::InvalidArgument);
  EXPECT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({1}), k.b(false), k.none(), k.out(F32, {1})}),
            Error::OutOfBounds);
}

TEST(Reduction, MaxMinArg) {
  KernelTest k;
  EValue* x = k.f({2, 3}, {1, 9, 3, 7, 5, 7});
  EValue* v = k.out(F32, {2});
  EValue* i = k.out(I64, {2});
  ASSERT_EQ(k.run("aten::max.dim", {x, k.i(1), k.b(false), v, i}), Error::Ok);
  EXPECT_EQ(k.vals(v), (V{9, 7}));
  EXPECT_EQ(k.ivals(i), (S{1, 0}));
  ASSERT_EQ(k.run("aten::min.dim", {x, k.i(-1), k.b(false), v, i}), Error::Ok);
  EXPECT_EQ(k.vals(v), (V{1, 5}));
  EXPECT_EQ(k.ivals(i), (S{0, 1}));
  EValue* a = k.out(I64, {});
  ASSERT_EQ(k.run("aten::argmax.default", {x, k.none(), k.b(false), a}), Error::Ok);
  EXPECT_EQ(k.ivals(a), (S{1}));
  EValue* am = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::amax.default", {x, k.ilist({0}), k.b(false), am}), Error::Ok);
  EXPECT_EQ(k.vals(am), (V{7, 9, 7}));
  EValue* s = k.out(F32, {});
  ASSERT_EQ(k.run("aten::max.default", {x, s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{9}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  ASSERT_EQ(k.run("aten::amax.default", {k.f({3}, {1, nan, 2}), k.ilist({}), k.b(false), s}), Error::Ok);
  EXPECT_TRUE(std::isnan(k.vals(s)[0]));
}

TEST(Reduction, VarStdCorrection) {
  KernelTest k;
  EValue* x = k.f({4}, {1, 2, 3, 4});
  EValue* out = k.out(F32, {});
  ASSERT_EQ(k.run("aten::var.correction", {x, k.none(), k.i(1), k.b(false), out}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(out)[0], 5.0 / 3);
  ASSERT_EQ(k.run("aten::var.correction", {x, k.none(), k.i(0), k.b(false), out}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(out)[0], 1.25);
  ASSERT_EQ(k.run("aten::std.correction", {x, k.ilist({0}), k.none(), k.b(false), out}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(out)[0], std::sqrt(5.0 / 3));
  EValue* m = k.out(F32, {});
  ASSERT_EQ(k.run("aten::var_mean.correction", {x, k.none(), k.i(0), k.b(false), out, m}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(m)[0], 2.5);
}

TEST(Reduction, AnyAllLogsumexpNorm) {
  KernelTest k;
  EValue* b = k.bt({2, 2}, {0, 1, 0, 0});
  EValue* o = k.out(ScalarType::Bool, {2});
  ASSERT_EQ(k.run("aten::any.dim", {b, k.i(1), k.b(false), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{1, 0}));
  EValue* s = k.out(ScalarType::Bool, {});
  ASSERT_EQ(k.run("aten::all.default", {k.f({2}, {1, 2}), s}), Error::Ok);
  EXPECT_EQ(k.vals(s), (V{1}));
  EValue* f = k.out(F32, {});
  ASSERT_EQ(k.run("aten::logsumexp.default", {k.f({2}, {0, 0}), k.ilist({0}), k.b(false), f}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(f)[0], std::log(2.0));
  ASSERT_EQ(k.run("aten::linalg_vector_norm.default", {k.f({2}, {3, -4}), k.d(2), k.none(), k.b(false), k.none(), f}),
            Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(f)[0], 5);
  ASSERT_EQ(k.run("aten::linalg_vector_norm.default",
                  {k.f({2}, {3, -4}), k.d(std::numeric_limits<double>::infinity()), k.none(), k.b(false), k.none(), f}),
            Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(f)[0], 4);
}

TEST(Scan, CumsumCumprodCummax) {
  KernelTest k;
  EValue* x = k.f({2, 3}, {1, 2, 3, 4, 5, 6});
  EValue* out = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::cumsum.default", {x, k.i(1), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 3, 6, 4, 9, 15}));
  ASSERT_EQ(k.run("aten::cumsum.default", {x, k.i(0), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 3, 5, 7, 9}));
  EValue* io = k.out(I64, {3});
  ASSERT_EQ(k.run("aten::cumsum.default", {k.l({3}, {1, 1, 1}), k.i(0), k.none(), io}), Error::Ok);
  EXPECT_EQ(k.ivals(io), (S{1, 2, 3}));
  ASSERT_EQ(k.run("aten::cumprod.default", {x, k.i(-1), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 6, 4, 20, 120}));
  EValue* v = k.out(F32, {4});
  EValue* i = k.out(I64, {4});
  ASSERT_EQ(k.run("aten::cummax.default", {k.f({4}, {1, 3, 2, 5}), k.i(0), v, i}), Error::Ok);
  EXPECT_EQ(k.vals(v), (V{1, 3, 3, 5}));
  EXPECT_EQ(k.ivals(i), (S{0, 1, 1, 3}));
}

TEST(Scan, SortTopkDiff) {
  KernelTest k;
  EValue* v = k.out(F32, {4});
  EValue* i = k.out(I64, {4});
  ASSERT_EQ(k.run("aten::sort.default", {k.f({4}, {3, 1, 2, 1}), k.i(-1), k.b(false), v, i}), Error::Ok);
  EXPECT_EQ(k.vals(v), (V{1, 1, 2, 3}));
  EXPECT_EQ(k.ivals(i), (S{1, 3, 2, 0}));
  EValue* tv = k.out(F32, {2});
  EValue* ti = k.out(I64, {2});
  ASSERT_EQ(k.run("aten::topk.default", {k.f({4}, {3, 1, 4, 2}), k.i(2), k.i(-1), k.b(true), k.b(true), tv, ti}),
            Error::Ok);
  EXPECT_EQ(k.vals(tv), (V{4, 3}));
  EXPECT_EQ(k.ivals(ti), (S{2, 0}));
  EValue* d = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::diff.default", {k.f({4}, {1, 4, 9, 16}), k.i(1), k.i(-1), k.none(), k.none(), d}),
            Error::Ok);
  EXPECT_EQ(k.vals(d), (V{3, 5, 7}));
}

}  // namespace
}  // namespace testing
}  // namespace ember
