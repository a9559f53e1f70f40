// quantized_decomposed quantize/dequantize kernels: PyTorch's rounding (half to even after
// x * float(1 / scale)), saturation, zero points, per-channel parameters along any axis, the
// .tensor overloads, and rejection of every invalid quantization parameter.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;
constexpr ScalarType I8 = ScalarType::Int8;
constexpr ScalarType U8 = ScalarType::UInt8;

int64_t dt(ScalarType t) { return static_cast<int64_t>(t); }

template <typename T>
std::vector<int> ints_of(TestTensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<int>(t.data<T>()[i]));
  return v;
}

TEST(Quantize, PerTensorRoundsHalfToEvenAndSaturates) {
  KernelRunner r;
  TestTensor x(F, {7}), q(I8, {7});
  x.set({0.25f, 0.75f, -0.25f, -0.75f, 100.0f, -100.0f, std::numeric_limits<float>::quiet_NaN()});
  // scale 0.5, zero point 3: x / 0.5 = 0.5, 1.5, -0.5, -1.5 -> 0, 2, -0, -2 (half to even)
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_tensor.default",
                  {r.tensor(x), r.d(0.5), r.i(3), r.i(-128), r.i(127), r.i(dt(I8)), r.tensor(q)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(ints_of<int8_t>(q), (std::vector<int>{3, 5, 3, 1, 127, -128, 3}));
  EXPECT_TRUE(q.guard_ok());
}

TEST(Quantize, RestrictedRangeAndUint8) {
  KernelRunner r;
  TestTensor x(F, {4}), q(U8, {4});
  x.set({-1.0f, 0.0f, 0.3f, 10.0f});
  // [quant_min, quant_max] = [10, 200], scale 0.01, zero point 128.
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_tensor.default",
                  {r.tensor(x), r.d(0.01), r.i(128), r.i(10), r.i(200), r.i(dt(U8)), r.tensor(q)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(ints_of<uint8_t>(q), (std::vector<int>{28, 128, 158, 200}));
}

TEST(Quantize, MultipliesByTheFloatReciprocalAsPyTorch) {
  // scale 0.1: PyTorch computes x * float(1 / 0.1) = x * 10.0f, not x / 0.1f. For x = 0.25f the
  // product is exactly 2.5 -> 2 (half to even); 0.35f * 10.0f rounds to 3.5 -> 4.
  KernelRunner r;
  TestTensor x(F, {2}), q(I8, {2});
  x.set({0.25f, 0.35f});
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_tensor.default",
                  {r.tensor(x), r.d(0.1), r.i(0), r.i(-128), r.i(127), r.i(dt(I8)), r.tensor(q)}),
            Error::Ok);
  const float inv = static_cast<float>(1.0 / 0.1);
  EXPECT_EQ(ints_of<int8_t>(q), (std::vector<int>{static_cast<int>(std::nearbyint(0.25f * inv)),
                                                  static_cast<int>(std::nearbyint(0.35f * inv))}));
}

TEST(Dequantize, PerTensor) {
  KernelRunner r;
  TestTensor q(I8, {2, 2}), x(F, {2, 2});
  const int8_t v[4] = {-128, 0, 3, 127};
  for (int i = 0; i < 4; ++i) q.data<int8_t>()[i] = v[i];
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_tensor.default",
                  {r.tensor(q), r.d(0.5), r.i(3), r.i(-128), r.i(127), r.i(dt(I8)), r.none(), r.tensor(x)}),
            Error::Ok)
      << r.message();
  expect_close(x.values(), {-65.5f, -1.5f, 0.0f, 62.0f}, 0, "dequantize");
  EXPECT_TRUE(x.guard_ok());
}

TEST(Dequantize, TensorOverloadsReadOneElementParameters) {
  KernelRunner r;
  TestTensor x(F, {3}), q(I8, {3}), back(F, {3});
  TestTensor scale(ScalarType::Float64, {1}), zp(ScalarType::Int64, {1});
  scale.data<double>()[0] = 0.25;
  zp.data<int64_t>()[0] = -2;
  x.set({-1.0f, 0.1f, 2.0f});
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_tensor.tensor",
                  {r.tensor(x), r.tensor(scale), r.tensor(zp), r.i(-128), r.i(127), r.i(dt(I8)), r.tensor(q)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(ints_of<int8_t>(q), (std::vector<int>{-6, -2, 6}));
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_tensor.tensor",
                  {r.tensor(q), r.tensor(scale), r.tensor(zp), r.i(-128), r.i(127), r.i(dt(I8)), r.i(dt(F)),
                   r.tensor(back)}),
            Error::Ok)
      << r.message();
  expect_close(back.values(), {-1.0f, 0.0f, 2.0f}, 0, "round trip");
}

TEST(QuantizePerChannel, AlongEachAxis) {
  // x [2, 3]; axis 0: scales [0.5, 0.25], zero points [0, 1]; axis 1: scales [1, 0.5, 0.25].
  KernelRunner r;
  TestTensor x(F, {2, 3}), q(I8, {2, 3}), back(F, {2, 3});
  x.set({1.0f, -1.0f, 2.0f, 0.5f, 0.25f, -0.5f});
  TestTensor s0(F, {2}), z0(ScalarType::Int64, {2});
  s0.set({0.5f, 0.25f});
  z0.data<int64_t>()[0] = 0;
  z0.data<int64_t>()[1] = 1;
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_channel.default",
                  {r.tensor(x), r.tensor(s0), r.tensor(z0), r.i(0), r.i(-128), r.i(127), r.i(dt(I8)), r.tensor(q)}),
            Error::Ok)
      << r.message();
  EXPECT_EQ(ints_of<int8_t>(q), (std::vector<int>{2, -2, 4, 3, 2, -1}));
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_channel.default",
                  {r.tensor(q), r.tensor(s0), r.tensor(z0), r.i(0), r.i(-128), r.i(127), r.i(dt(I8)), r.none(),
                   r.tensor(back)}),
            Error::Ok)
      << r.message();
  expect_close(back.values(), {1.0f, -1.0f, 2.0f, 0.5f, 0.25f, -0.5f}, 0, "axis 0 round trip");

  TestTensor s1(ScalarType::Float64, {3}), z1(ScalarType::Int32, {3});
  s1.data<double>()[0] = 1.0;
  s1.data<double>()[1] = 0.5;
  s1.data<double>()[2] = 0.25;
  for (int i = 0; i < 3; ++i) z1.data<int32_t>()[i] = 0;
  ASSERT_EQ(r.run("quantized_decomposed::quantize_per_channel.default",
                  {r.tensor(x), r.tensor(s1), r.tensor(z1), r.i(-1), r.i(-128), r.i(127), r.i(dt(I8)), r.tensor(q)}),
            Error::Ok)
      << r.message();
  // 1/1 -> 1, -1/0.5 -> -2, 2/0.25 -> 8; 0.5/1 -> 0 (half to even), 0.25/0.5 -> 0, -0.5/0.25 -> -2
  EXPECT_EQ(ints_of<int8_t>(q), (std::vector<int>{1, -2, 8, 0, 0, -2}));
  // Dequantize without zero points (symmetric weights).
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_channel.default",
                  {r.tensor(q), r.tensor(s1), r.none(), r.i(1), r.i(-128), r.i(127), r.i(dt(I8)), r.none(),
                   r.tensor(back)}),
            Error::Ok)
      << r.message();
  expect_close(back.values(), {1.0f, -1.0f, 2.0f, 0.0f, 0.0f, -0.5f}, 0, "axis 1, no zero points");
}

TEST(DequantizePerChannelGroup, GroupsOfARow) {
  // [2, 4] int4 values, groups of 2: scales [[0.5, 1], [2, 0.25]], zero points [[0, 1], [-1, 0]].
  KernelRunner r;
  TestTensor q(I8, {2, 4}), scales(F, {2, 2}), zps(ScalarType::Int64, {2, 2}), out(F, {2, 4});
  const int8_t v[8] = {-8, 7, 1, -2, 3, -1, 7, -8};
  for (int i = 0; i < 8; ++i) q.data<int8_t>()[i] = v[i];
  scales.set({0.5f, 1.0f, 2.0f, 0.25f});
  const int64_t z[4] = {0, 1, -1, 0};
  for (int i = 0; i < 4; ++i) zps.data<int64_t>()[i] = z[i];
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_channel_group.default",
                  {r.tensor(q), r.tensor(scales), r.tensor(zps), r.i(-8), r.i(7), r.i(dt(I8)), r.i(2), r.i(dt(F)),
                   r.tensor(out)}),
            Error::Ok)
      << r.message();
  expect_close(out.values(), {-4.0f, 3.5f, 0.0f, -3.0f, 8.0f, 0.0f, 1.75f, -2.0f}, 0, "groups");
  EXPECT_TRUE(out.guard_ok());
  // Without zero points; a group size that does not divide the row is refused.
  ASSERT_EQ(r.run("quantized_decomposed::dequantize_per_channel_group.default",
                  {r.tensor(q), r.tensor(scales), r.none(), r.i(-8), r.i(7), r.i(dt(I8)), r.i(2), r.i(dt(F)),
                   r.tensor(out)}),
            Error::Ok)
      << r.message();
  expect_close(out.values(), {-4.0f, 3.5f, 1.0f, -2.0f, 6.0f, -2.0f, 1.75f, -2.0f}, 0, "no zero points");
  EXPECT_NE(r.run("quantized_decomposed::dequantize_per_channel_group.default",
                  {r.tensor(q), r.tensor(scales), r.none(), r.i(-8), r.i(7), r.i(dt(I8)), r.i(3), r.i(dt(F)),
                   r.tensor(out)}),
            Error::Ok);
  scales.set({0.5f, 0.0f, 2.0f, 0.25f});
  EXPECT_NE(r.run("quantized_decomposed::dequantize_per_channel_group.default",
                  {r.tensor(q), r.tensor(scales), r.none(), r.i(-8), r.i(7), r.i(dt(I8)), r.i(2), r.i(dt(F)),
                   r.tensor(out)}),
            Error::Ok);
}

// Every invalid parameter is an error with a message, never undefined arithmetic.
// choose_qparams.tensor (PT2E dynamic quantization): PyTorch's determine_qparams in float32.
// The expected values are what torch.ops.quantized_decomposed.choose_qparams.tensor returns
// (torch 2.15): scale (hi - lo) / 255 as a float32 widened to float64, zero point -128 -
// round(lo / scale); the range always holds 0; eps floors the scale.
TEST(ChooseQparams, PerTensorAsymmetricLikePyTorch) {
  struct Case {
    std::vector<float> x;
    double scale;
    int64_t zero_point;
  };
  const double s3 = static_cast<double>(3.0f / 255.0f), s4 = static_cast<double>(4.0f / 255.0f);
  for (const Case& c : {Case{{-1.0f, 0.5f, 2.0f}, s3, -43}, Case{{0.25f, 3.0f, 1.5f}, s3, -128},
                        Case{{0.0f, 0.0f}, 0.000244140625, -128}, Case{{-4.0f, -2.0f, -0.5f}, s4, 127}}) {
    KernelRunner r;
    TestTensor x(F, {static_cast<int64_t>(c.x.size())}), scale(ScalarType::Float64, {1}), zp(ScalarType::Int64, {1});
    x.set(c.x);
    ASSERT_EQ(r.run("quantized_decomposed::choose_qparams.tensor",
                    {r.tensor(x), r.i(-128), r.i(127), r.d(0.000244140625), r.i(dt(I8)), r.tensor(scale), r.tensor(zp)}),
              Error::Ok)
        << r.message();
    EXPECT_EQ(scale.data<double>()[0], c.scale);
    EXPECT_EQ(zp.data<int64_t>()[0], c.zero_point);
  }
  // NaN, an empty input, a bad range or dtype: errors, never garbage parameters.
  KernelRunner r;
  TestTensor nan(F, {2}), empty(F, {0}), scale(ScalarType::Float64, {1}), zp(ScalarType::Int64, {1});
  nan.set({1.0f, std::numeric_limits<float>::quiet_NaN()});
  auto run = [&](TestTensor& x, int64_t qmin, int64_t qmax, int64_t dtype) {
    return r.run("quantized_decomposed::choose_qparams.tensor",
                 {r.tensor(x), r.i(qmin), r.i(qmax), r.d(1e-5), r.i(dtype), r.tensor(scale), r.tensor(zp)});
  };
  EXPECT_EQ(run(nan, -128, 127, dt(I8)), Error::InvalidArgument);
  EXPECT_NE(std::string(r.message()).find("NaN"), std::string::npos) << r.message();
  EXPECT_EQ(run(empty, -128, 127, dt(I8)), Error::InvalidArgument);
  TestTensor ok(F, {1});
  ok.set({1.0f});
  EXPECT_EQ(run(ok, 0, 255, dt(I8)), Error::InvalidArgument);
  EXPECT_EQ(run(ok, 5, 2, dt(U8)), Error::InvalidArgument);
  EXPECT_EQ(run(ok, -128, 127, dt(F)), Error::InvalidArgument);
  EXPECT_EQ(run(ok, -128, 127, 99), Error::InvalidArgument);
}

TEST(Quantize, RejectsInvalidParameters) {
  KernelRunner r;
  TestTensor x(F, {2}), q(I8, {2}), qu(U8, {2}), xf(F, {2});
  x.set({0.5f, 1.0f});
  auto quantize = [&](double scale, int64_t zp, int64_t qmin, int64_t qmax, int64_t dtype, TestTensor& out) {
    return r.run("quantized_decomposed::quantize_per_tensor.default",
                 {r.tensor(x), r.d(scale), r.i(zp), r.i(qmin), r.i(qmax), r.i(dtype), r.tensor(out)});
  };
  EXPECT_NE(quantize(0.0, 0, -128, 127, dt(I8), q), Error::Ok);                       // zero scale
  EXPECT_NE(quantize(-1.0, 0, -128, 127, dt(I8), q), Error::Ok);                      // negative
  EXPECT_NE(quantize(std::nan(""), 0, -128, 127, dt(I8), q), Error::Ok);             // NaN
  EXPECT_NE(quantize(0.1, 0, 10, -10, dt(I8), q), Error::Ok);                         // min > max
  EXPECT_NE(quantize(0.1, 0, -129, 127, dt(I8), q), Error::Ok);                       // beyond int8
  EXPECT_NE(quantize(0.1, 0, 0, 255, dt(I8), q), Error::Ok);                          // uint8 range, int8 out
  EXPECT_NE(quantize(0.1, 300, 0, 255, dt(U8), qu), Error::Ok);                       // zero point
  EXPECT_NE(quantize(0.1, 0, 0, 255, dt(I8), qu), Error::Ok);                         // dtype arg differs
  EXPECT_NE(quantize(0.1, 0, -128, 127, dt(F), xf), Error::Ok);                       // float "quantized"
  EXPECT_FALSE(r.message().empty());
  // Per-channel: wrong length, bad axis, non-positive channel scale.
  TestTensor x2(F, {2, 3}), q2(I8, {2, 3}), s3(F, {3}), s2(F, {2}), z2(ScalarType::Int64, {2});
  s3.set({1, 1, 1});
  s2.set({1, 0});
  z2.data<int64_t>()[0] = z2.data<int64_t>()[1] = 0;
  auto per_channel = [&](TestTensor& scales, int64_t axis) {
    return r.run("quantized_decomposed::quantize_per_channel.default",
                 {r.tensor(x2), r.tensor(scales), r.tensor(z2), r.i(axis), r.i(-128), r.i(127), r.i(dt(I8)),
                  r.tensor(q2)});
  };
  EXPECT_NE(per_channel(s3, 0), Error::Ok);  // 3 scales for 2 channels
  EXPECT_NE(per_channel(s2, 2), Error::Ok);  // axis out of range
  EXPECT_NE(per_channel(s2, 0), Error::Ok);  // zero scale in channel 1
  // dequantize to float16 is not supported: said, not silently float32.
  TestTensor qq(I8, {2}), out16(ScalarType::Float16, {2});
  EXPECT_NE(r.run("quantized_decomposed::dequantize_per_tensor.default",
                  {r.tensor(qq), r.d(0.5), r.i(0), r.i(-128), r.i(127), r.i(dt(I8)), r.i(dt(ScalarType::Float16)),
                   r.tensor(out16)}),
            Error::Ok);
}

}  // namespace
}  // namespace testing
}  // namespace ember
