// ember_quantized::conv2d / ::linear against PyTorch's float reference computed here in double
// (dequantize, convolve / multiply, add bias, quantize with round half to even): odd sizes,
// stride, padding, dilation, groups (depthwise), int8 and uint8 activations with non-zero zero
// points, the fused-relu output range; and the parameter checks.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

struct Quant {
  double in_scale = 0.02, out_scale = 0.05;
  int64_t in_zp = 0, out_zp = 0, out_min = -128, out_max = 127;
};

template <typename Q>
void fill_ints(TestTensor& t, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<Q>()[i] = static_cast<Q>(d(rng));
}

int64_t quantize_ref(double y, const Quant& q) {
  double v = std::nearbyint(y / q.out_scale) + static_cast<double>(q.out_zp);
  v = std::min(std::max(v, static_cast<double>(q.out_min)), static_cast<double>(q.out_max));
  return static_cast<int64_t>(v);
}

// |got - want| <= 1 everywhere (float vs double rounding at exact ties), and almost all equal.
template <typename Q>
void expect_quantized_close(TestTensor& got, const std::vector<int64_t>& want, const char* what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  int64_t off_by_one = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int64_t g = got.data<Q>()[i];
    ASSERT_LE(std::abs(g - want[i]), 1) << what << " element " << i;
    off_by_one += g != want[i];
  }
  EXPECT_LE(off_by_one * 100, got.numel()) << what << ": more than 1% of the values differ by one step";
  EXPECT_TRUE(got.guard_ok()) << what;
}

struct ConvCase {
  int64_t n, c, h, w, o, kh, kw, stride, pad, dil, groups;
};

template <typename Q>
void run_conv_case(const ConvCase& k, const Quant& q, ScalarType dtype, bool with_bias) {
  std::mt19937 rng(static_cast<uint32_t>(k.c * 131 + k.o * 7 + k.groups));
  const int64_t oh = (k.h + 2 * k.pad - k.dil * (k.kh - 1) - 1) / k.stride + 1;
  const int64_t ow = (k.w + 2 * k.pad - k.dil * (k.kw - 1) - 1) / k.stride + 1;
  const int64_t cin_g = k.c / k.groups, cout_g = k.o / k.groups;
  TestTensor x(dtype, {k.n, k.c, k.h, k.w}), w(ScalarType::Int8, {k.o, cin_g, k.kh, k.kw});
  TestTensor scales(ScalarType::Float32, {k.o}), bias(ScalarType::Float32, {k.o});
  TestTensor out(dtype, {k.n, k.o, oh, ow});
  if (dtype == ScalarType::Int8) fill_ints<int8_t>(x, rng, -128, 127);
  else fill_ints<uint8_t>(x, rng, 0, 255);
  fill_ints<int8_t>(w, rng, -127, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.01f), bd(-1.0f, 1.0f);
  for (int64_t o = 0; o < k.o; ++o) {
    scales.f()[o] = sd(rng);
    bias.f()[o] = bd(rng);
  }
  KernelRunner r;
  ASSERT_EQ(r.run("ember_quantized::conv2d.default",
                  {r.tensor(x), r.d(q.in_scale), r.i(q.in_zp), r.tensor(w), r.tensor(scales),
                   with_bias ? r.tensor(bias) : r.none(), r.ints({k.stride, k.stride}), r.ints({k.pad, k.pad}),
                   r.ints({k.dil, k.dil}), r.i(k.groups), r.d(q.out_scale), r.i(q.out_zp), r.i(q.out_min),
                   r.i(q.out_max), r.tensor(out)}),
            Error::Ok)
      << r.message();
  std::vector<int64_t> want;
  for (int64_t b = 0; b < k.n; ++b) {
    for (int64_t o = 0; o < k.o; ++o) {
      const int64_t g = o / cout_g;
      for (int64_t oy = 0; oy < oh; ++oy) {
        for (int64_t ox = 0; ox < ow; ++ox) {
          double y = with_bias ? bias.f()[o] : 0.0;
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            for (int64_t ky = 0; ky < k.kh; ++ky) {
              for (int64_t kx = 0; kx < k.kw; ++kx) {
                const int64_t iy = oy * k.stride - k.pad + ky * k.dil, ix = ox * k.stride - k.pad + kx * k.dil;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t xi = ((b * k.c + g * cin_g + ci) * k.h + iy) * k.w + ix;
                const double xv = dtype == ScalarType::Int8 ? x.data<int8_t>()[xi] : x.data<uint8_t>()[xi];
                const double wv = w.data<int8_t>()[((o * cin_g + ci) * k.kh + ky) * k.kw + kx];
                y += (xv - static_cast<double>(q.in_zp)) * q.in_scale * wv * scales.f()[o];
              }
            }
          }
          want.push_back(quantize_ref(y, q));
        }
      }
    }
  }
  expect_quantized_close<Q>(out, want, "conv2d");
}

TEST(QuantizedConv2d, MatchesTheFloatReference) {
  Quant q;
  q.in_zp = -5;
  q.out_zp = 3;
  run_conv_case<int8_t>({1, 3, 9, 7, 5, 3, 3, 1, 1, 1, 1}, q, ScalarType::Int8, true);
  run_conv_case<int8_t>({2, 4, 11, 10, 6, 3, 2, 2, 0, 1, 1}, q, ScalarType::Int8, false);  // stride 2
  run_conv_case<int8_t>({1, 6, 8, 8, 6, 3, 3, 1, 2, 2, 6}, q, ScalarType::Int8, true);    // depthwise, dilation 2
  run_conv_case<int8_t>({1, 4, 5, 5, 8, 1, 1, 1, 0, 1, 2}, q, ScalarType::Int8, true);    // 1x1, 2 groups
}

TEST(QuantizedConv2d, Uint8AndFusedRelu) {
  Quant q;
  q.in_zp = 128;
  q.out_zp = 100;
  q.out_min = 100;  // relu6-like fused range: nothing below the zero point, nothing above 200
  q.out_max = 200;
  run_conv_case<uint8_t>({1, 3, 7, 7, 4, 3, 3, 1, 1, 1, 1}, q, ScalarType::UInt8, true);
}

TEST(QuantizedLinear, MatchesTheFloatReference) {
  std::mt19937 rng(7);
  const int64_t rows = 3, k = 37, n = 11;
  Quant q;
  q.in_zp = 10;
  q.out_zp = -7;
  q.out_scale = 0.2;
  TestTensor x(ScalarType::Int8, {1, rows, k}), w(ScalarType::Int8, {n, k});
  TestTensor scales(ScalarType::Float32, {n}), bias(ScalarType::Float32, {n}), out(ScalarType::Int8, {1, rows, n});
  fill_ints<int8_t>(x, rng, -128, 127);
  fill_ints<int8_t>(w, rng, -127, 127);
  std::uniform_real_distribution<float> sd(0.001f, 0.01f), bd(-1.0f, 1.0f);
  for (int64_t o = 0; o < n; ++o) {
    scales.f()[o] = sd(rng);
    bias.f()[o] = bd(rng);
  }
  KernelRunner r;
  ASSERT_EQ(r.run("ember_quantized::linear.default",
                  {r.tensor(x), r.d(q.in_scale), r.i(q.in_zp), r.tensor(w), r.tensor(scales), r.tensor(bias),
                   r.d(q.out_scale), r.i(q.out_zp), r.i(q.out_min), r.i(q.out_max), r.tensor(out)}),
            Error::Ok)
      << r.message();
  std::vector<int64_t> want;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t o = 0; o < n; ++o) {
      double y = bias.f()[o];
      for (int64_t j = 0; j < k; ++j) {
        y += (x.data<int8_t>()[i * k + j] - static_cast<double>(q.in_zp)) * q.in_scale * w.data<int8_t>()[o * k + j] *
             scales.f()[o];
      }
      want.push_back(quantize_ref(y, q));
    }
  }
  expect_quantized_close<int8_t>(out, want, "linear");
}

TEST(QuantizedLinear, RejectsInvalidParameters) {
  KernelRunner r;
  TestTensor x(ScalarType::Int8, {2, 4}), w(ScalarType::Int8, {3, 4}), scales(ScalarType::Float32, {3});
  TestTensor out(ScalarType::Int8, {2, 3}), out_u8(ScalarType::UInt8, {2, 3}), w_bad(ScalarType::Int8, {3, 5});
  TestTensor scales_short(ScalarType::Float32, {2}), wf(ScalarType::Float32, {3, 4});
  scales.set({0.1f, 0.1f, 0.1f});
  scales_short.set({0.1f, 0.1f});
  auto run = [&](TestTensor& weight, TestTensor& s, double in_scale, int64_t out_min, int64_t out_max, TestTensor& o) {
    return r.run("ember_quantized::linear.default",
                 {r.tensor(x), r.d(in_scale), r.i(0), r.tensor(weight), r.tensor(s), r.none(), r.d(0.5), r.i(0),
                  r.i(out_min), r.i(out_max), r.tensor(o)});
  };
  EXPECT_EQ(run(w, scales, 0.1, -128, 127, out), Error::Ok) << r.message();
  EXPECT_NE(run(w, scales, 0.0, -128, 127, out), Error::Ok);         // zero input scale
  EXPECT_NE(run(w, scales, 0.1, 10, -10, out), Error::Ok);           // empty output range
  EXPECT_NE(run(w, scales, 0.1, -128, 200, out), Error::Ok);         // range beyond int8
  EXPECT_NE(run(w, scales, 0.1, -128, 127, out_u8), Error::Ok);      // int8 in, uint8 out
  EXPECT_NE(run(w_bad, scales, 0.1, -128, 127, out), Error::Ok);     // K mismatch
  EXPECT_NE(run(w, scales_short, 0.1, -128, 127, out), Error::Ok);   // scales per channel
  EXPECT_NE(run(wf, scales, 0.1, -128, 127, out), Error::Ok);        // float weight
  scales.set({0.1f, -0.1f, 0.1f});
  EXPECT_NE(run(w, scales, 0.1, -128, 127, out), Error::Ok);         // negative channel scale
  EXPECT_FALSE(r.message().empty());
}

}  // namespace
}  // namespace testing
}  // namespace ember
