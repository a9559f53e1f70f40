// Shared util pieces (promotion, half/bfloat16 conversion, broadcast plan) and the misc,
// random and padding kernels.
#include <cmath>

#include "gtest/gtest.h"
#include "kernels/portable/util/dtype_util.h"
#include "kernels/portable/util/promotion.h"
#include "test/kernels/portable/kernel_test_util.h"

namespace ember {
namespace testing {
namespace {

using V = std::vector<double>;
using S = std::vector<int64_t>;
using portable::promote_types;
using portable::ResultType;
constexpr ScalarType F32 = ScalarType::Float32;
constexpr ScalarType I64 = ScalarType::Int64;

TEST(Promotion, PromoteTypes) {
  EXPECT_EQ(promote_types(ScalarType::Bool, ScalarType::Bool), ScalarType::Bool);
  EXPECT_EQ(promote_types(ScalarType::Bool, ScalarType::Int8), ScalarType::Int8);
  EXPECT_EQ(promote_types(ScalarType::UInt8, ScalarType::Int8), ScalarType::Int16);
  EXPECT_EQ(promote_types(ScalarType::UInt8, ScalarType::Int32), ScalarType::Int32);
  EXPECT_EQ(promote_types(ScalarType::Int32, ScalarType::Int64), ScalarType::Int64);
  EXPECT_EQ(promote_types(ScalarType::Int64, ScalarType::Float16), ScalarType::Float16);
  EXPECT_EQ(promote_types(ScalarType::Float16, ScalarType::BFloat16), F32);
  EXPECT_EQ(promote_types(F32, ScalarType::Float64), ScalarType::Float64);
}

TEST(Promotion, ResultTypeWithScalarsAndZeroDim) {
  KernelTest k;
  auto rt = [](std::initializer_list<const EValue*> vs) {
    ResultType r;
    for (const EValue* v : vs) {
      if (v->is_tensor()) r.add_tensor(*v->as_tensor); else r.add_scalar(*v);
    }
    return r.get();
  };
  EXPECT_EQ(rt({k.l({3}, {}), k.d(2.5)}), F32);                                   // int + float scalar
  EXPECT_EQ(rt({k.t(ScalarType::UInt8, {3}, {}), k.i(1000)}), ScalarType::UInt8);  // same category
  EXPECT_EQ(rt({k.t(ScalarType::Int32, {3}, {}), k.l({}, {1})}), ScalarType::Int32);
  EXPECT_EQ(rt({k.t(ScalarType::Int32, {3}, {}), k.t(ScalarType::Float64, {}, {1})}), ScalarType::Float64);
  EXPECT_EQ(rt({k.t(ScalarType::Float16, {3}, {}), k.t(ScalarType::Float64, {}, {1})}), ScalarType::Float16);
  EXPECT_EQ(rt({k.bt({3}, {}), k.bt({3}, {})}), ScalarType::Bool);
  EXPECT_EQ(rt({k.bt({3}, {}), k.i(1)}), I64);
  EXPECT_EQ(rt({k.i(1), k.d(1)}), F32);
}

TEST(Dtype, HalfAndBFloat16RoundTrip) {
  using portable::float_to_half;
  using portable::half_to_float;
  EXPECT_EQ(half_to_float(float_to_half(1.0f)), 1.0f);
  EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(70000.0f))));
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
  EXPECT_EQ(half_to_float(float_to_half(5.960464477539063e-08f)), 5.960464477539063e-08f);  // min subnormal
  EXPECT_EQ(half_to_float(float_to_half(1.0009765625f)), 1.0009765625f);
  EXPECT_EQ(half_to_float(float_to_half(1.00048828125f)), 1.0f);  // tie rounds to even
  EXPECT_EQ(portable::bf16_to_float(portable::float_to_bf16(3.0f)), 3.0f);
  EXPECT_EQ(portable::convert<uint8_t>(int64_t{300}), 44);
  EXPECT_EQ(portable::convert<int32_t>(NAN), 0);
}

TEST(Misc, SearchsortedBucketize) {
  KernelTest k;
  EValue* out = k.out(I64, {4});
  EValue* seq = k.f({3}, {1, 3, 5});
  EValue* vals = k.f({4}, {0, 3, 4, 6});
  ASSERT_EQ(k.run("aten::searchsorted.Tensor", {seq, vals, k.b(false), k.b(false), k.none(), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{0, 1, 2, 3}));
  ASSERT_EQ(k.run("aten::bucketize.Tensor", {vals, seq, k.b(false), k.b(true), out}), Error::Ok);
  EXPECT_EQ(k.ivals(out), (S{0, 2, 2, 3}));
}

// One step is the start (PyTorch's OpInfo sample linspace(-2, -3, 1) is [-2]).
TEST(Misc, LinspaceLogspaceOneStepIsStart) {
  KernelTest k;
  EValue* out = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::linspace.default", {k.d(-2), k.d(-3), k.i(1), k.none(), k.none(), k.none(), k.none(), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{-2}));
  ASSERT_EQ(k.run("aten::logspace.default",
                  {k.d(1), k.d(3), k.i(1), k.d(10), k.none(), k.none(), k.none(), k.none(), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{10}));
  ASSERT_EQ(k.run("aten::linspace.default", {k.d(0), k.d(1), k.i(3), k.none(), k.none(), k.none(), k.none(), out}),
            Error::Ok);
  EXPECT_EQ(k.vals(out), (V{0, 0.5, 1}));
}

TEST(Misc, EyeAndEyeM) {
  KernelTest k;
  EValue* out = k.out(F32, {3, 3});
  ASSERT_EQ(k.run("aten::eye.m", {k.i(2), k.i(3), k.none(), k.none(), k.none(), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 0, 0, 0, 1, 0}));
  ASSERT_EQ(k.run("aten::eye.default", {k.i(2), k.none(), k.none(), k.none(), k.none(), out}), Error::Ok);
  EXPECT_EQ(k.vals(out), (V{1, 0, 0, 1}));
}

// normal.float_float(mean, std, size): sample mean and std close to the parameters.
TEST(Misc, NormalFloatFloat) {
  KernelTest k;
  EValue* out = k.out(F32, {100, 40});
  ASSERT_EQ(k.run("aten::normal.float_float", {k.d(3.0), k.d(0.5), k.ilist({100, 40}), k.none(), k.none(), k.none(),
                                                k.none(), k.none(), out}),
            Error::Ok);
  V v = k.vals(out);
  ASSERT_EQ(v.size(), 4000u);
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  const double mean = sum / v.size();
  for (double x : v) sq += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 3.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / v.size()), 0.5, 0.05);
}

TEST(Misc, Rot90OuterUniqueIsin) {
  KernelTest k;
  EValue* r = k.out(F32, {2, 2});
  ASSERT_EQ(k.run("aten::rot90.default", {k.f({2, 2}, {1, 2, 3, 4}), k.i(1), k.ilist({0, 1}), r}), Error::Ok);
  EXPECT_EQ(k.vals(r), (V{2, 4, 1, 3}));
  EValue* o = k.out(F32, {2, 3});
  ASSERT_EQ(k.run("aten::outer.default", {k.f({2}, {1, 2}), k.f({3}, {1, 10, 100}), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{1, 10, 100, 2, 20, 200}));
  EValue* u = k.out(F32, {5});
  EValue* inv = k.out(I64, {5});
  EValue* cnt = k.out(I64, {5});
  ASSERT_EQ(k.run("aten::_unique2.default", {k.f({5}, {3, 1, 3, 2, 1}), k.b(true), k.b(true), k.b(true), u, inv, cnt}),
            Error::Ok);
  EXPECT_EQ(k.vals(u), (V{1, 2, 3}));
  EXPECT_EQ(k.ivals(inv), (S{2, 0, 2, 1, 0}));
  EXPECT_EQ(k.ivals(cnt), (S{2, 1, 2}));
  EValue* b = k.out(ScalarType::Bool, {3});
  ASSERT_EQ(k.run("aten::isin.Tensor_Tensor", {k.l({3}, {1, 2, 3}), k.l({2}, {3, 1}), k.b(false), k.b(false), b}),
            Error::Ok);
  EXPECT_EQ(k.vals(b), (V{1, 0, 1}));
}

TEST(Random, ShapesAndRanges) {
  KernelTest k;
  EValue* r = k.out(F32, {100});
  ASSERT_EQ(k.run("aten::rand.default", {k.ilist({100}), k.none(), k.none(), k.none(), k.none(), r}), Error::Ok);
  for (double v : k.vals(r)) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 1);
  }
  EValue* ri = k.out(I64, {50});
  ASSERT_EQ(k.run("aten::randint_like.default", {k.l({50}, {}), k.i(3), k.none(), k.none(), k.none(), k.none(),
                                                 k.none(), ri}), Error::Ok);
  for (int64_t v : k.ivals(ri)) {
    EXPECT_GE(v, 0);
    EXPECT_LT(v, 3);
  }
  EValue* bern = k.out(F32, {4});
  ASSERT_EQ(k.run("aten::bernoulli.default", {k.f({4}, {0, 1, 0, 1}), k.none(), bern}), Error::Ok);
  EXPECT_EQ(k.vals(bern), (V{0, 1, 0, 1}));
}

TEST(Pad, ModesAndCrop) {
  KernelTest k;
  EValue* x = k.f({1, 3}, {1, 2, 3});
  EValue* o = k.out(F32, {1, 7});
  ASSERT_EQ(k.run("aten::pad.default", {x, k.ilist({2, 2}), k.str("replicate"), k.none(), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{1, 1, 1, 2, 3, 3, 3}));
  ASSERT_EQ(k.run("aten::pad.default", {x, k.ilist({2, 2}), k.str("circular"), k.none(), o}), Error::Ok);
  EXPECT_EQ(k.vals(o), (V{2, 3, 1, 2, 3, 1, 2}));
  EValue* c = k.out(F32, {1, 1});
  ASSERT_EQ(k.run("aten::constant_pad_nd.default", {x, k.ilist({-1, -1}), k.i(0), c}), Error::Ok);
  EXPECT_EQ(k.vals(c), (V{2}));
  EXPECT_NE(k.run("aten::pad.default", {x, k.ilist({3, 0}), k.str("reflect"), k.none(), o}), Error::Ok);
}

}  // namespace
}  // namespace testing
}  // namespace ember

#include "kernels/portable/threadpool/pthreadpool_thread_pool.h"

namespace ember {
namespace testing {
namespace {

// Large broadcast/same-shape elementwise ops and reductions on real threads agree with a
// serial reference.
TEST(Threads, ElementwiseAndReductionsMatchSerial) {
  PthreadpoolThreadPool pool(2);
  KernelTest k;
  const int64_t rows = 300, cols = 257;
  V a(rows * cols), b(cols);
  for (int64_t i = 0; i < rows * cols; ++i) a[i] = static_cast<double>(i % 97) - 40;
  for (int64_t j = 0; j < cols; ++j) b[j] = static_cast<double>(j % 13);
  EValue* x = k.f({rows, cols}, a);
  EValue* y = k.f({cols}, b);
  EValue* serial = k.out(F32, {rows, cols});
  ASSERT_EQ(k.run("aten::mul.Tensor", {x, y, serial}), Error::Ok);
  k.use_pool(&pool);
  EValue* threaded = k.out(F32, {rows, cols});
  ASSERT_EQ(k.run("aten::mul.Tensor", {x, y, threaded}), Error::Ok);
  EXPECT_EQ(k.vals(serial), k.vals(threaded));
  ASSERT_EQ(k.run("aten::relu.default", {x, threaded}), Error::Ok);
  V r = k.vals(threaded);
  for (int64_t i = 0; i < rows * cols; i += 101) EXPECT_EQ(r[i], a[i] < 0 ? 0 : a[i]);
  EValue* s = k.out(F32, {rows});
  ASSERT_EQ(k.run("aten::sum.dim_IntList", {x, k.ilist({1}), k.b(false), k.none(), s}), Error::Ok);
  V sv = k.vals(s);
  for (int64_t i = 0; i < rows; i += 37) {
    double want = 0;
    for (int64_t j = 0; j < cols; ++j) want += a[i * cols + j];
    EXPECT_EQ(sv[i], want);
  }
  EValue* p = k.out(F32, {cols, rows});
  ASSERT_EQ(k.run("aten::permute.default", {x, k.ilist({1, 0}), p}), Error::Ok);
  V pv = k.vals(p);
  EXPECT_EQ(pv[5 * rows + 7], a[7 * cols + 5]);
}

}  // namespace
}  // namespace testing
}  // namespace ember

namespace ember {
namespace testing {
namespace {

TEST(Misc, KronModeSegmentIgamma) {
  KernelTest k;
  EValue* kr = k.out(F32, {2, 4});
  ASSERT_EQ(k.run("aten::kron.default", {k.f({1, 2}, {1, 2}), k.f({2, 2}, {1, 10, 100, 1000}), kr}), Error::Ok);
  EXPECT_EQ(k.vals(kr), (V{1, 10, 2, 20, 100, 1000, 200, 2000}));
  EValue* mv = k.out(F32, {2});
  EValue* mi = k.out(I64, {2});
  ASSERT_EQ(k.run("aten::mode.default", {k.f({2, 4}, {3, 1, 3, 1, 5, 5, 2, 7}), k.i(-1), k.b(false), mv, mi}), Error::Ok);
  EXPECT_EQ(k.vals(mv), (V{1, 5}));
  EXPECT_EQ(k.ivals(mi), (S{3, 1}));
  EValue* sr = k.out(F32, {3});
  ASSERT_EQ(k.run("aten::segment_reduce.default", {k.f({5}, {1, 2, 3, 4, 5}), k.str("sum"), k.l({3}, {2, 0, 3}),
                                                   k.none(), k.none(), k.i(0), k.b(false), k.none(), sr}), Error::Ok);
  EXPECT_EQ(k.vals(sr), (V{3, 0, 12}));
  EValue* ig = k.out(F32, {2});
  ASSERT_EQ(k.run("aten::igamma.default", {k.f({2}, {1, 1}), k.f({2}, {1, 0}), ig}), Error::Ok);
  EXPECT_NEAR(k.vals(ig)[0], 1 - std::exp(-1.0), 1e-6);  // P(1, x) = 1 - e^-x
  EXPECT_EQ(k.vals(ig)[1], 0);
  EValue* pg = k.out(F32, {1});
  ASSERT_EQ(k.run("aten::polygamma.default", {k.i(1), k.f({1}, {-8.4784}), pg}), Error::Ok);
  EXPECT_NEAR(k.vals(pg)[0], 9.804, 2e-3);  // trigamma at a negative non-integer
}

}  // namespace
}  // namespace testing
}  // namespace ember
