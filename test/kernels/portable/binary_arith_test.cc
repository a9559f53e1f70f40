// add/sub/mul/div/... through the registry: broadcasting, promotion, scalars, errors.
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

TEST(BinaryArith, AddBroadcastAlpha) {
  KernelTest k;
  EValue* out = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::add.Tensor", {k.f({2, 3}, {1, 2, 3, 4, 5, 6}), k.f({3}, {10, 20, 30}),
                                       k.i(2), out}), Error::Ok) << k.last_error;
  EXPECT_EQ(k.vals(out), (V{21, 42, 63, 24, 45, 66}));
  EXPECT_EQ(k.shape(out), (S{2, 3}));
}

TEST(BinaryArith, AddColumnRowBroadcast) {
  KernelTest k;
  EValue* out = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::add.Tensor", {k.f({2, 1}, {1, 2}), k.f({1, 3}, {10, 20, 30}), k.i(1), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{11, 21, 31, 12, 22, 32}));
}

TEST(BinaryArith, LargeContiguousChunked) {
  KernelTest k;
  const int64_t n = 100003;
  V a(n), b(n);
  for (int64_t i = 0; i < n; ++i) { a[i] = i; b[i] = 2 * i; }
  EValue* out = k.out(F32, {n});
  ASSERT_EQ(k.run("aten::mul.Tensor", {k.f({n}, a), k.f({n}, b), out}), Error::Ok);
  V r = k.vals(out);
  for (int64_t i = 0; i < n; i += 997) EXPECT_EQ(r[i], static_cast<float>(2.0 * i * i));
}

TEST(BinaryArith, IntTensorPlusFloatScalarIsFloat) {
  KernelTest k;
  EValue* out = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::add.Scalar", {k.l({3}, {1, 2, 3}), k.d(0.5), k.i(1), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1.5, 2.5, 3.5}));
}

TEST(BinaryArith, Uint8Wraps) {
  KernelTest k;
  EValue* out = k.out(ScalarType::UInt8, {2});
  ASSERT_EQ(k.run("aten::add.Tensor", {k.t(ScalarType::UInt8, {2}, {200, 1}),
                                       k.t(ScalarType::UInt8, {2}, {100, 2}), k.i(1), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{44, 3}));
}

TEST(BinaryArith, MixedIntPromotion) {
  KernelTest k;
  EValue* out = k.out(ScalarType::Int64, {2});
  ASSERT_EQ(k.run("aten::mul.Tensor", {k.t(ScalarType::Int32, {2}, {3, -4}), k.l({2}, {5, 6}), out}),
            Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{15, -24}));
}

TEST(BinaryArith, SubRsub) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::sub.Tensor", {k.f({2}, {5, 6}), k.f({}, {1}), k.d(2.0), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3, 4}));
  ASSERT_EQ(k.run("aten::rsub.Scalar", {k.f({2}, {5, 6}), k.i(1), k.i(1), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-4, -5}));
}

TEST(BinaryArith, DivModes) {
  KernelTest k;
  EValue* out = k.out(F32, {4});
  EValue* a = k.f({4}, {7, -7, 7, -7});
  EValue* b = k.f({4}, {2, 2, -2, -2});
  ASSERT_EQ(k.run("aten::div.Tensor", {a, b, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3.5, -3.5, -3.5, 3.5}));
  ASSERT_EQ(k.run("aten::div.Tensor_mode", {a, b, k.str("floor"), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3, -4, -4, 3}));
  ASSERT_EQ(k.run("aten::div.Tensor_mode", {a, b, k.str("trunc"), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3, -3, -3, 3}));
  ASSERT_EQ(k.run("aten::div.Tensor_mode", {a, b, k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3.5, -3.5, -3.5, 3.5}));
  EXPECT_NE(k.run("aten::div.Tensor_mode", {a, b, k.str("round"), out}), Error::Ok);
}

TEST(BinaryArith, IntDivIsFloatAndFloorDivIsInt) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::div.Tensor", {k.l({2}, {7, -7}), k.l({2}, {2, 2}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{3.5, -3.5}));
  EValue* iout = k.out(ScalarType::Int64, {3});
  ASSERT_EQ(k.run("aten::floor_divide.default", {k.l({3}, {7, -7, 5}), k.l({3}, {2, 2, 0}), iout}),
            Error::Ok);
  EXPECT_EQ(k.ivals(iout)[0], 3);
  EXPECT_EQ(k.ivals(iout)[1], -4);
}

TEST(BinaryArith, RemainderFmod) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::remainder.Scalar", {k.f({2}, {-3, 3}), k.i(2), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 1}));
  ASSERT_EQ(k.run("aten::fmod.Scalar", {k.f({2}, {-3, 3}), k.i(2), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-1, 1}));
  EValue* iout = k.out(ScalarType::Int64, {2});
  ASSERT_EQ(k.run("aten::remainder.Tensor", {k.l({2}, {-3, 3}), k.l({2}, {2, -2}), iout}), Error::Ok);
  EXPECT_EQ(k.ivals(iout), (S{1, -1}));
}

TEST(BinaryArith, Pow) {
  KernelTest k;
  EValue* out = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::pow.Tensor_Scalar", {k.f({3}, {1, 2, 3}), k.i(2), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 4, 9}));
  ASSERT_EQ(k.run("aten::pow.Tensor_Scalar", {k.f({3}, {1, 4, 9}), k.d(0.5), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 3}));
  ASSERT_EQ(k.run("aten::pow.Scalar", {k.i(2), k.f({3}, {0, 1, 3}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 8}));
  EValue* iout = k.out(ScalarType::Int64, {3});
  ASSERT_EQ(k.run("aten::pow.Tensor_Tensor", {k.l({3}, {2, 3, -2}), k.l({3}, {10, 3, 3}), iout}),
            Error::Ok);
  EXPECT_EQ(k.ivals(iout), (S{1024, 27, -8}));
}

TEST(BinaryArith, MaximumMinimumNan) {
  KernelTest k;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EValue* out = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::maximum.default", {k.f({3}, {1, nan, 5}), k.f({3}, {2, 1, 3}), out}), Error::Ok);
  V r = k.vals(out);
  EXPECT_EQ(r[0], 2);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_EQ(r[2], 5);
  ASSERT_EQ(k.run("aten::fmin.default", {k.f({3}, {1, nan, 5}), k.f({3}, {2, 1, 3}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 1, 3}));
}

TEST(BinaryArith, Atan2IntPromotesToFloat) {
  KernelTest k;
  EValue* out = k.out(F32, {1});
  ASSERT_EQ(k.run("aten::atan2.default", {k.l({1}, {1}), k.l({1}, {1}), out}), Error::Ok);
  EXPECT_FLOAT_EQ(k.vals(out)[0], static_cast<float>(M_PI / 4));
}

TEST(BinaryArith, HalfAndBFloat16) {
  KernelTest k;
  EValue* out = k.out(ScalarType::Float16, {2});
  ASSERT_EQ(k.run("aten::add.Tensor", {k.t(ScalarType::Float16, {2}, {1.5, -2}),
                                       k.t(ScalarType::Float16, {2}, {0.25, 4}), k.i(1), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1.75, 2}));
  EValue* bout = k.out(ScalarType::BFloat16, {1});
  ASSERT_EQ(k.run("aten::mul.Scalar", {k.t(ScalarType::BFloat16, {1}, {3}), k.d(0.5), bout}), Error::Ok);
  EXPECT_EQ(k.vals(bout), (V{1.5}));
}

TEST(BinaryArith, InPlaceAlias) {
  KernelTest k;
  EValue* a = k.f({3}, {1, 2, 3});
  ASSERT_EQ(k.run("aten::add_.Tensor", {a, k.f({3}, {1, 1, 1}), k.i(1), a}), Error::Ok);
  EXPECT_EQ(k.vals(a), (V{2, 3, 4}));
}

TEST(BinaryArith, EmptyTensor) {
  KernelTest k;
  EValue* out = k.out(F32, {0, 3});
  ASSERT_EQ(k.run("aten::add.Tensor", {k.f({0, 3}, {}), k.f({3}, {1, 2, 3}), k.i(1), out}), Error::Ok);
  EXPECT_EQ(k.shape(out), (S{0, 3}));
}

TEST(BinaryArith, Errors) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  // Wrong argument count.
  EXPECT_EQ(k.run("aten::mul.Tensor", {k.f({2}, {1, 2}), out}), Error::InvalidArgument);
  // Shapes that do not broadcast.
  EXPECT_EQ(k.run("aten::mul.Tensor", {k.f({2}, {1, 2}), k.f({3}, {1, 2, 3}), out}),
            Error::InvalidArgument);
  // Output too small.
  EValue* small = k.out(F32, {1});
  EXPECT_EQ(k.run("aten::mul.Tensor", {k.f({2}, {1, 2}), k.f({2}, {1, 2}), small}), Error::OutOfBounds);
  EXPECT_NE(k.last_error.find("aten::mul.Tensor"), std::string::npos);
  // Non-tensor operand.
  EXPECT_EQ(k.run("aten::mul.Tensor", {k.ilist({1}), k.f({2}, {1, 2}), out}), Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
