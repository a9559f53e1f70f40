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
