// Unary math, activations, comparisons, where/masked_fill/clamp through the registry.
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
constexpr ScalarType B = ScalarType::Bool;

void expect_near(const V& got, const V& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << i;
    else EXPECT_NEAR(got[i], want[i], tol) << i;
  }
}

TEST(Unary, FloatOps) {
  KernelTest k;
  EValue* x = k.f({3}, {0, 1, 4});
  EValue* out = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::sqrt.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 1, 2}));
  ASSERT_EQ(k.run("aten::exp.default", {x, out}), Error::Ok);
  expect_near(k.vals(out), {1, std::exp(1.0), std::exp(4.0)}, 1e-4);
  ASSERT_EQ(k.run("aten::rsqrt.default", {k.f({2}, {1, 4}), k.out(F32, {2})}), Error::Ok);
  ASSERT_EQ(k.run("aten::sigmoid.default", {k.f({1}, {0}), out}), Error::Ok);
  EXPECT_EQ(k.shape(out), (S{1}));
  EXPECT_EQ(k.vals(out), (V{0.5}));
  ASSERT_EQ(k.run("aten::erfinv.default", {k.f({3}, {0, 0.5, -0.9}), out = k.out(F32, {3})}), Error::Ok);
  expect_near(k.vals(out), {0, 0.4769362762044699, -1.1630871536766743}, 1e-5);
}

TEST(Unary, IntInputPromotesToFloat) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::sqrt.default", {k.l({2}, {4, 9}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{2, 3}));
}

TEST(Unary, SameTypeOps) {
  KernelTest k;
  EValue* out = k.out(ScalarType::Int64, {3});
  ASSERT_EQ(k.run("aten::abs.default", {k.l({3}, {-3, 0, 5}), out}), Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{3, 0, 5}));
  ASSERT_EQ(k.run("aten::neg.default", {k.l({3}, {-3, 0, 5}), out}), Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{3, 0, -5}));
  EValue* fo = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::round.default", {k.f({4}, {0.5, 1.5, 2.5, -0.5}), fo}), Error::Ok);
  EXPECT_EQ(k.vals(fo), (V{0, 2, 2, -0}));
  ASSERT_EQ(k.run("aten::round.decimals", {k.f({2}, {1.2345, 123.4}), k.i(2), fo = k.out(F32, {2})}), Error::Ok);
  expect_near(k.vals(fo), {1.23, 123.4}, 1e-5);
  ASSERT_EQ(k.run("aten::sign.default", {k.f({3}, {-2, 0, 3}), fo = k.out(F32, {3})}), Error::Ok);
  EXPECT_EQ(k.vals(fo), (V{-1, 0, 1}));
}

TEST(Unary, Predicates) {
  KernelTest k;
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EValue* x = k.f({4}, {1, nan, inf, -inf});
  EValue* out = k.out(B, {4});
  ASSERT_EQ(k.run("aten::isnan.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 1, 0, 0}));
  ASSERT_EQ(k.run("aten::isinf.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 0, 1, 1}));
  ASSERT_EQ(k.run("aten::isfinite.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 0, 0, 0}));
  ASSERT_EQ(k.run("aten::logical_not.default", {k.bt({2}, {1, 0}), out = k.out(B, {2})}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 1}));
  EValue* io = k.out(ScalarType::UInt8, {1});
  ASSERT_EQ(k.run("aten::bitwise_not.default", {k.t(ScalarType::UInt8, {1}, {200}), io}), Error::Ok);
  EXPECT_EQ(k.vals(io), (V{55}));
  EXPECT_NE(k.run("aten::bitwise_not.default", {k.f({1}, {1}), k.out(F32, {1})}), Error::Ok);
}

TEST(Activation, ReluFamily) {
  KernelTest k;
  EValue* x = k.f({5}, {-4, -1, 0, 2, 7});
  EValue* out = k.out(F32, {5});
  ASSERT_EQ(k.run("aten::relu.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 0, 0, 2, 7}));
  ASSERT_EQ(k.run("aten::hardtanh.default", {x, k.d(-2), k.d(3), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-2, -1, 0, 2, 3}));
  ASSERT_EQ(k.run("aten::relu6.default", {x, out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 0, 0, 2, 6}));
  ASSERT_EQ(k.run("aten::hardswish.default", {x, out}), Error::Ok);
  expect_near(k.vals(out), {0, -1.0 * 2 / 6, 0, 2 * 5.0 / 6, 7});
  ASSERT_EQ(k.run("aten::hardsigmoid.default", {x, out}), Error::Ok);
  expect_near(k.vals(out), {0, 2.0 / 6, 0.5, 5.0 / 6, 1});
  ASSERT_EQ(k.run("aten::leaky_relu.default", {x, k.d(0.1), out}), Error::Ok);
  expect_near(k.vals(out), {-0.4, -0.1, 0, 2, 7});
  ASSERT_EQ(k.run("aten::threshold.default", {x, k.i(0), k.i(-9), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-9, -9, -9, 2, 7}));
}

TEST(Activation, InPlaceRelu) {
  KernelTest k;
  EValue* x = k.f({3}, {-1, 0, 1});
  ASSERT_EQ(k.run("aten::relu_.default", {x, x}), Error::Ok);
  EXPECT_EQ(k.vals(x), (V{0, 0, 1}));
}

TEST(Activation, SmoothOnes) {
  KernelTest k;
  EValue* x = k.f({3}, {-1, 0, 1});
  EValue* out = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::silu.default", {x, out}), Error::Ok);
  expect_near(k.vals(out), {-1 / (1 + std::exp(1.0)), 0, 1 / (1 + std::exp(-1.0))});
  ASSERT_EQ(k.run("aten::gelu.default", {x, k.str("none"), out}), Error::Ok);
  expect_near(k.vals(out), {-0.15865525393145707, 0, 0.8413447460685429});
  ASSERT_EQ(k.run("aten::gelu.default", {x, k.str("tanh"), out}), Error::Ok);
  expect_near(k.vals(out), {-0.15880800939172324, 0, 0.8411919906082768});
  EXPECT_NE(k.run("aten::gelu.default", {x, k.str("bogus"), out}), Error::Ok);
  ASSERT_EQ(k.run("aten::elu.default", {x, k.d(1), k.d(1), k.d(1), out}), Error::Ok);
  expect_near(k.vals(out), {std::expm1(-1.0), 0, 1});
  ASSERT_EQ(k.run("aten::softplus.default", {x, k.d(1), k.d(20), out}), Error::Ok);
  expect_near(k.vals(out), {std::log1p(std::exp(-1.0)), std::log(2.0), std::log1p(std::exp(1.0))});
  ASSERT_EQ(k.run("aten::logit.default", {k.f({1}, {0.25}), k.none(), out = k.out(F32, {1})}), Error::Ok);
  expect_near(k.vals(out), {std::log(1.0 / 3)});
}

TEST(Clamp, ScalarAndTensorBounds) {
  KernelTest k;
  EValue* x = k.f({4}, {-5, 0, 5, 10});
  EValue* out = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::clamp.default", {x, k.i(-1), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-1, 0, 5, 10}));
  ASSERT_EQ(k.run("aten::clamp.default", {x, k.none(), k.d(6.5), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-5, 0, 5, 6.5}));
  ASSERT_EQ(k.run("aten::clamp.Tensor", {x, k.f({4}, {0, 1, 2, 3}), k.f({1}, {4}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 1, 4, 4}));
  EXPECT_NE(k.run("aten::clamp.default", {x, k.none(), k.none(), out}), Error::Ok);
  // Integer tensor clamped with a float bound promotes to float.
  ASSERT_EQ(k.run("aten::clamp.default", {k.l({2}, {1, 5}), k.d(1.5), k.none(), out = k.out(F32, {2})}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1.5, 5}));
  ASSERT_EQ(k.run("aten::clamp_min.default", {k.f({2}, {-1, 3}), k.i(0), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 3}));
}

TEST(Compare, TensorAndScalar) {
  KernelTest k;
  EValue* out = k.out(B, {2, 3});
  ASSERT_EQ(k.run("aten::lt.Tensor", {k.f({2, 3}, {1, 2, 3, 4, 5, 6}), k.f({3}, {2, 2, 2}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 0, 0, 0, 0, 0}));
  ASSERT_EQ(k.run("aten::eq.Scalar", {k.l({2, 3}, {1, 2, 3, 1, 2, 3}), k.i(2), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 1, 0, 0, 1, 0}));
  // int tensor vs float scalar compares in float.
  ASSERT_EQ(k.run("aten::ge.Scalar", {k.l({2, 3}, {1, 2, 3, 1, 2, 3}), k.d(2.5), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 0, 1, 0, 0, 1}));
  EValue* o2 = k.out(B, {2});
  ASSERT_EQ(k.run("aten::logical_and.default", {k.bt({2}, {1, 1}), k.f({2}, {0, 3}), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{0, 1}));
  ASSERT_EQ(k.run("aten::bitwise_and.Tensor", {k.bt({2}, {1, 1}), k.bt({2}, {0, 1}), o2}), Error::Ok);
  EXPECT_EQ(k.vals(o2), (V{0, 1}));
  EValue* io = k.out(ScalarType::Int64, {2});
  ASSERT_EQ(k.run("aten::__and__.Tensor", {k.l({2}, {6, 5}), k.l({2}, {3, 3}), io}), Error::Ok);
  EXPECT_EQ(k.ivals(io), (S{2, 1}));
  EXPECT_NE(k.run("aten::bitwise_and.Tensor", {k.f({2}, {1, 1}), k.f({2}, {0, 1}), io}), Error::Ok);
}

TEST(Where, BroadcastAndScalars) {
  KernelTest k;
  EValue* cond = k.bt({2, 1}, {1, 0});
  EValue* out = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::where.self", {cond, k.f({3}, {1, 2, 3}), k.f({}, {-1}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 3, -1, -1, -1}));
  ASSERT_EQ(k.run("aten::where.ScalarOther", {cond, k.f({3}, {1, 2, 3}), k.d(0.5), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 3, 0.5, 0.5, 0.5}));
}

TEST(Where, MaskedFill) {
  KernelTest k;
  EValue* out = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::masked_fill.Scalar", {k.f({2, 2}, {1, 2, 3, 4}), k.bt({2}, {1, 0}), k.d(-7), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-7, 2, -7, 4}));
  ASSERT_EQ(k.run("aten::masked_fill.Tensor", {k.f({2, 2}, {1, 2, 3, 4}), k.bt({2, 2}, {0, 0, 0, 1}),
                                               k.f({}, {9}), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 2, 3, 9}));
}

TEST(Ternary, LerpAddcmul) {
  KernelTest k;
  EValue* out = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::lerp.Scalar", {k.f({2}, {0, 10}), k.f({2}, {10, 20}), k.d(0.25), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{2.5, 12.5}));
  ASSERT_EQ(k.run("aten::addcmul.default", {k.f({2}, {1, 1}), k.f({2}, {2, 3}), k.f({2}, {4, 5}), k.d(0.5), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{5, 8.5}));
}

}  // namespace
}  // namespace testing
}  // namespace ember
