// Per-op differential tests of the Vulkan delegate against naive reference loops, on
// whatever Vulkan device exists (lavapipe in CI). Small, odd shapes; skipped without Vulkan.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <gtest/gtest.h>

#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

float clampf(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

Floats conv2d_ref(const Floats& x, const Sizes& xs, const Floats& w, const Sizes& ws, const Floats* b,
                  int sh, int sw, int ph, int pw, int dh, int dw, int groups, const Sizes& os,
                  float lo, float hi) {
  Floats y(numel(os));
  int64_t icg = xs[1] / groups, ocg = ws[0] / groups;
  for (int64_t n = 0; n < os[0]; ++n)
    for (int64_t oc = 0; oc < os[1]; ++oc)
      for (int64_t oh = 0; oh < os[2]; ++oh)
        for (int64_t ow = 0; ow < os[3]; ++ow) {
          double acc = b ? (*b)[oc] : 0.0;
          int64_t g = oc / ocg;
          for (int64_t ic = 0; ic < icg; ++ic)
            for (int64_t kh = 0; kh < ws[2]; ++kh)
              for (int64_t kw = 0; kw < ws[3]; ++kw) {
                int64_t ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                if (ih < 0 || ih >= xs[2] || iw < 0 || iw >= xs[3]) continue;
                acc += x[((n * xs[1] + g * icg + ic) * xs[2] + ih) * xs[3] + iw] *
                       w[((oc * icg + ic) * ws[2] + kh) * ws[3] + kw];
              }
          y[((n * os[1] + oc) * os[2] + oh) * os[3] + ow] = clampf(static_cast<float>(acc), lo, hi);
        }
  return y;
}

TEST(VulkanOpsTest, Conv2dStridePadDilationBiasRelu6) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes xs{2, 3, 7, 6}, ws{5, 3, 3, 2};
  Floats x = random_floats(numel(xs), 1), w = random_floats(numel(ws), 2), bias = random_floats(5, 3);
  VulkanBlobBuilder b;
  int in = b.input(xs);
  int y = b.conv2d(in, b.constant(ws, w), b.constant({5}, bias), {2, 1}, {1, 0}, {1, 2}, 1,
                   VkActivation::relu6());
  b.output(y);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
  EXPECT_EQ(b.sizes(y), (Sizes{2, 5, 4, 4}));
  EXPECT_TRUE(near(out[0], conv2d_ref(x, xs, w, ws, &bias, 2, 1, 1, 0, 1, 2, 1, b.sizes(y), 0, 6)));
}

TEST(VulkanOpsTest, Conv2dDepthwiseAndGroupsNoBiasHardtanh) {
  EMBER_SKIP_WITHOUT_VULKAN();
  for (int groups : {4, 2}) {
    Sizes xs{1, 4, 5, 5}, ws{8, 4 / groups, 3, 3};
    Floats x = random_floats(numel(xs), 4), w = random_floats(numel(ws), 5);
    VulkanBlobBuilder b;
    int y = b.conv2d(b.input(xs), b.constant(ws, w), -1, {1}, {1}, {1}, groups,
                     VkActivation::clamp_to(-0.5f, 0.5f));
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
    EXPECT_TRUE(near(out[0], conv2d_ref(x, xs, w, ws, nullptr, 1, 1, 1, 1, 1, 1, groups, b.sizes(y), -0.5f, 0.5f)))
        << "groups " << groups;
  }
}

TEST(VulkanOpsTest, LinearWithAndWithoutBias) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes xs{2, 3, 7};
  Floats x = random_floats(42, 6), w = random_floats(35, 7), bias = random_floats(5, 8);
  for (bool has_bias : {true, false}) {
    VulkanBlobBuilder b;
    int y = b.linear(b.input(xs), b.constant({5, 7}, w), has_bias ? b.constant({5}, bias) : -1,
                     has_bias ? VkActivation::relu() : VkActivation::none());
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
    Floats want(30);
    for (int m = 0; m < 6; ++m)
      for (int n = 0; n < 5; ++n) {
        float acc = has_bias ? bias[n] : 0;
        for (int k = 0; k < 7; ++k) acc += x[m * 7 + k] * w[n * 7 + k];
        want[m * 5 + n] = has_bias ? std::max(acc, 0.0f) : acc;
      }
    EXPECT_EQ(b.sizes(y), (Sizes{2, 3, 5}));
    EXPECT_TRUE(near(out[0], want));
  }
}

Floats matmul_ref(const Floats& a, const Sizes& as, const Floats& bm, const Sizes& bs, const Sizes& os) {
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  Sizes ob(os.begin(), os.end() - 2), ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  int64_t batch = numel(ob);
  Floats y(numel(os));
  for (int64_t t = 0; t < batch; ++t) {
    int64_t ia = ab.empty() ? 0 : broadcast_index(ob, t, ab), ib = bb.empty() ? 0 : broadcast_index(ob, t, bb);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += a[(ia * M + m) * K + k] * bm[(ib * K + k) * N + n];
        y[(t * M + m) * N + n] = static_cast<float>(acc);
      }
  }
  return y;
}

TEST(VulkanOpsTest, MatmulBmmAndBroadcast) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct Case { Sizes a, b; };
  for (const Case& c : {Case{{3, 4, 5}, {3, 5, 6}}, Case{{2, 3, 4, 5}, {5, 6}}, Case{{7, 3}, {2, 3, 5}},
                        Case{{1, 3, 2}, {4, 2, 3}}}) {
    Floats a = random_floats(numel(c.a), 9), bm = random_floats(numel(c.b), 10);
    VulkanBlobBuilder b;
    int ia = b.input(c.a), ib = b.input(c.b);
    int y = b.matmul(ia, ib);
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(c.a, a), HostTensor::f32(c.b, bm)}, {y}, &out)) << sizes_str(c.a);
    EXPECT_TRUE(near(out[0], matmul_ref(a, c.a, bm, c.b, b.sizes(y)))) << sizes_str(c.a) << " @ " << sizes_str(c.b);
  }
}

// Shapes large enough for the tiled shader paths (>= 16 output rows), none a multiple of the
// 32x32 tile or the 16-step k block, so every edge guard is exercised.
TEST(VulkanOpsTest, TiledMatmulLinearAndConvMatchReferences) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct MatCase { Sizes a, b; };
  for (const MatCase& c : {MatCase{{3, 33, 19}, {3, 19, 35}}, MatCase{{2, 40, 17}, {17, 70}},
                           MatCase{{16, 1}, {1, 33}}}) {
    Floats a = random_floats(numel(c.a), 30), bm = random_floats(numel(c.b), 31);
    VulkanBlobBuilder b;
    int ia = b.input(c.a), ib = b.input(c.b);  // inputs in order (argument evaluation order is unspecified)
    int y = b.matmul(ia, ib);
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(c.a, a), HostTensor::f32(c.b, bm)}, {y}, &out)) << sizes_str(c.a);
    EXPECT_TRUE(near(out[0], matmul_ref(a, c.a, bm, c.b, b.sizes(y)))) << sizes_str(c.a) << " @ " << sizes_str(c.b);
  }
  {  // linear: weight [N, K] read transposed, bias and relu in the epilogue
    const int64_t M = 37, K = 41, N = 45;
    Floats x = random_floats(M * K, 32), w = random_floats(N * K, 33), bias = random_floats(N, 34);
    VulkanBlobBuilder b;
    int y = b.linear(b.input({M, K}), b.constant({N, K}, w), b.constant({N}, bias), VkActivation::relu());
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32({M, K}, x)}, {y}, &out));
    Floats want(static_cast<size_t>(M * N));
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = bias[n];
        for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * w[n * K + k];
        want[m * N + n] = std::max(static_cast<float>(acc), 0.0f);
      }
    EXPECT_TRUE(near(out[0], want));
  }
  // conv: 20 or 40 output channels per group, padding, stride, dilation; the implicit-GEMM path
  // (conv2d_gemm.comp, the default for these shapes) and the direct loop forced in turn.
  for (int forced = 0; forced < 4; ++forced) {
    const int groups = 1 + forced % 2;
    setenv("EMBER_VULKAN_CONV_GEMM", forced < 2 ? "1" : "0", 1);
    Sizes xs{2, 6, 11, 13}, ws{40, 6 / groups, 3, 2};
    Floats x = random_floats(numel(xs), 35), w = random_floats(numel(ws), 36), bias = random_floats(40, 37);
    VulkanBlobBuilder b;
    int y = b.conv2d(b.input(xs), b.constant(ws, w), b.constant({40}, bias), {2, 1}, {1, 1}, {1, 2}, groups,
                     VkActivation::relu6());
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
    const Sizes& os = b.sizes(y);
    unsetenv("EMBER_VULKAN_CONV_GEMM");
    EXPECT_TRUE(near(out[0], conv2d_ref(x, xs, w, ws, &bias, 2, 1, 1, 1, 1, 2, groups, os, 0, 6)))
        << "groups " << groups << " gemm " << (forced < 2);
  }
}

// Deep reductions over few outputs take the split-K conv path (8 invocations per output over
// interleaved input channels, 60 per group here so the split is uneven); forced off, the
// direct loop must agree.
TEST(VulkanOpsTest, SplitKConvMatchesReference) {
  EMBER_SKIP_WITHOUT_VULKAN();
  for (int forced = 0; forced < 4; ++forced) {
    const int groups = 1 + forced % 2;
    setenv("EMBER_VULKAN_KSPLIT", forced < 2 ? "1" : "0", 1);
    setenv("EMBER_VULKAN_CONV_GEMM", "0", 1);  // conv2d.comp's split, not conv2d_gemm.comp's
    Sizes xs{2, 60 * groups, 6, 5}, ws{18, 60, 3, 3};
    Floats x = random_floats(numel(xs), 40), w = random_floats(numel(ws), 41), bias = random_floats(18, 42);
    VulkanBlobBuilder b;
    int y = b.conv2d(b.input(xs), b.constant(ws, w), b.constant({18}, bias), {2, 1}, {1, 1}, {1, 1}, groups,
                     VkActivation::relu());
    b.output(y);
    std::vector<Floats> out;
    const bool ok = run(b, {HostTensor::f32(xs, x)}, {y}, &out);
    unsetenv("EMBER_VULKAN_KSPLIT");
    unsetenv("EMBER_VULKAN_CONV_GEMM");
    ASSERT_TRUE(ok);
    EXPECT_TRUE(near(out[0], conv2d_ref(x, xs, w, ws, &bias, 2, 1, 1, 1, 1, 1, groups, b.sizes(y), 0, INFINITY)))
        << "groups " << groups << " split " << (forced < 2);
  }
}

TEST(VulkanOpsTest, MatmulPartialBatchBroadcastIsNotSupported) {
  EMBER_SKIP_WITHOUT_VULKAN();
  VulkanBlobBuilder b;
  int ia = b.input({2, 1, 3, 4});
  int ib = b.input({3, 4, 5});
  int y = b.matmul(ia, ib);  // batch (2, 1) x (3): partially broadcast
  b.output(y);
  ASSERT_TRUE(b.ok()) << b.error();
  Delegate d;
  EXPECT_EQ(d.init(b.build()), Error::NotSupported);
  EXPECT_NE(std::string(d.message()).find("broadcast"), std::string::npos) << d.message();
}

TEST(VulkanOpsTest, BinaryOpsBroadcast) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes as{2, 1, 5}, bs{3, 1};
  Floats a = random_floats(10, 11), bv = random_floats(3, 12, 0.5f, 2.0f);
  for (VkBinary op : {VkBinary::Add, VkBinary::Sub, VkBinary::Mul, VkBinary::Div}) {
    VulkanBlobBuilder b;
    int ia = b.input(as);
    int ib = b.input(bs);
    int y = b.binary(op, ia, ib, 0.5f);
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32(as, a), HostTensor::f32(bs, bv)}, {y}, &out));
    Sizes os{2, 3, 5};
    ASSERT_EQ(b.sizes(y), os);
    Floats want(30);
    for (int64_t i = 0; i < 30; ++i) {
      float va = a[broadcast_index(os, i, as)], vb = bv[broadcast_index(os, i, bs)];
      want[i] = op == VkBinary::Add ? va + 0.5f * vb : op == VkBinary::Sub ? va - 0.5f * vb
              : op == VkBinary::Mul ? va * vb : va / vb;
    }
    EXPECT_TRUE(near(out[0], want)) << "op " << static_cast<int>(op);
  }
}

TEST(VulkanOpsTest, BinaryWithConstantScalarOperand) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Floats a = random_floats(7, 13);
  VulkanBlobBuilder b;
  int y = b.binary(VkBinary::Mul, b.input({7}), b.constant({}, {3.0f}));
  b.output(y);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32({7}, a)}, {y}, &out));
  Floats want(7);
  for (int i = 0; i < 7; ++i) want[i] = a[i] * 3;
  EXPECT_TRUE(near(out[0], want));
}

TEST(VulkanOpsTest, UnaryOps) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Floats x = random_floats(37, 14, -5.0f, 5.0f);
  x[0] = -30.0f;
  x[1] = 30.0f;
  auto sig = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
  struct Case { VkUnary op; float lo, hi; };
  for (const Case& c : {Case{VkUnary::Relu, 0, 0}, Case{VkUnary::Clamp, -1.0f, 2.5f},
                        Case{VkUnary::Hardtanh, -1, 1}, Case{VkUnary::Hardswish, 0, 0},
                        Case{VkUnary::Sigmoid, 0, 0}, Case{VkUnary::Silu, 0, 0}, Case{VkUnary::Gelu, 0, 0},
                        Case{VkUnary::GeluTanh, 0, 0}, Case{VkUnary::Tanh, 0, 0}}) {
    VulkanBlobBuilder b;
    int y = b.unary(c.op, b.input({37}), c.lo, c.hi);
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32({37}, x)}, {y}, &out));
    Floats want(37);
    for (int i = 0; i < 37; ++i) {
      float v = x[i];
      switch (c.op) {
        case VkUnary::Relu: want[i] = std::max(v, 0.0f); break;
        case VkUnary::Clamp:
        case VkUnary::Hardtanh: want[i] = clampf(v, c.lo, c.hi); break;
        case VkUnary::Hardswish: want[i] = v * clampf(v + 3, 0, 6) / 6; break;
        case VkUnary::Sigmoid: want[i] = sig(v); break;
        case VkUnary::Silu: want[i] = v * sig(v); break;
        case VkUnary::Gelu: want[i] = 0.5f * v * (1 + std::erf(v / std::sqrt(2.0f))); break;
        case VkUnary::GeluTanh:
          want[i] = 0.5f * v * (1 + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
          break;
        case VkUnary::Tanh: want[i] = std::tanh(v); break;
        default: FAIL() << "covered by UnaryArithmeticOps";
      }
    }
    EXPECT_TRUE(near(out[0], want, 2e-5f)) << "op " << static_cast<int>(c.op);
  }
}

// The ops scalar arithmetic and RMSNorm lower to: affine (x*a+b), rsqrt, sqrt, exp and pow
// with integer exponents (negative bases too) and a fractional one; hardsigmoid (MobileNetV3).
TEST(VulkanOpsTest, UnaryArithmeticOps) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Floats x = random_floats(29, 15, -5.0f, 5.0f), pos = random_floats(29, 16, 0.1f, 4.0f);
  struct Case { VkUnary op; float a, b; bool positive; };
  for (const Case& c : {Case{VkUnary::Affine, -2.5f, 0.75f, false}, Case{VkUnary::Rsqrt, 0, 0, true},
                        Case{VkUnary::Sqrt, 0, 0, true}, Case{VkUnary::Exp, 0, 0, false},
                        Case{VkUnary::Pow, 2.0f, 0, false}, Case{VkUnary::Pow, 3.0f, 0, false},
                        Case{VkUnary::Pow, -1.0f, 0, true}, Case{VkUnary::Pow, 0.5f, 0, true},
                        Case{VkUnary::Hardsigmoid, 0, 0, false}}) {
    const Floats& in = c.positive ? pos : x;
    VulkanBlobBuilder b;
    int y = b.unary(c.op, b.input({29}), c.a, c.b);
    b.output(y);
    std::vector<Floats> out;
    ASSERT_TRUE(run(b, {HostTensor::f32({29}, in)}, {y}, &out));
    Floats want(29);
    for (int i = 0; i < 29; ++i) {
      const double v = in[i];
      switch (c.op) {
        case VkUnary::Affine: want[i] = static_cast<float>(v * c.a + c.b); break;
        case VkUnary::Rsqrt: want[i] = static_cast<float>(1.0 / std::sqrt(v)); break;
        case VkUnary::Sqrt: want[i] = static_cast<float>(std::sqrt(v)); break;
        case VkUnary::Exp: want[i] = static_cast<float>(std::exp(v)); break;
        case VkUnary::Hardsigmoid: want[i] = static_cast<float>(std::min(std::max(v + 3.0, 0.0), 6.0) / 6.0); break;
        default: want[i] = static_cast<float>(std::pow(v, static_cast<double>(c.a))); break;
      }
    }
    EXPECT_TRUE(near(out[0], want, 2e-5f)) << "op " << static_cast<int>(c.op) << " a=" << c.a;
  }
}

// PyTorch pooling semantics (max: padding is -inf; avg: count_include_pad/divisor_override).
Floats pool_ref(const Floats& x, const Sizes& xs, int mode, int kh, int kw, int sh, int sw, int ph, int pw,
                int dh, int dw, bool cip, int div, const Sizes& os) {
  Floats y(numel(os));
  for (int64_t p = 0; p < xs[0] * xs[1]; ++p)
    for (int64_t oh = 0; oh < os[2]; ++oh)
      for (int64_t ow = 0; ow < os[3]; ++ow) {
        const float* plane = &x[p * xs[2] * xs[3]];
        float r;
        if (mode == 0) {
          r = -INFINITY;
          for (int i = 0; i < kh; ++i)
            for (int j = 0; j < kw; ++j) {
              int64_t ih = oh * sh - ph + i * dh, iw = ow * sw - pw + j * dw;
              if (ih >= 0 && ih < xs[2] && iw >= 0 && iw < xs[3]) r = std::max(r, plane[ih * xs[3] + iw]);
            }
        } else if (mode == 1) {
          int64_t hs = oh * sh - ph, ws = ow * sw - pw;
          int64_t he = std::min<int64_t>(hs + kh, xs[2] + ph), we = std::min<int64_t>(ws + kw, xs[3] + pw);
          int64_t pool = (he - hs) * (we - ws);
          hs = std::max<int64_t>(hs, 0); ws = std::max<int64_t>(ws, 0);
          he = std::min<int64_t>(he, xs[2]); we = std::min<int64_t>(we, xs[3]);
          float s = 0;
          for (int64_t i = hs; i < he; ++i)
            for (int64_t j = ws; j < we; ++j) s += plane[i * xs[3] + j];
          r = s / (div ? div : cip ? pool : (he - hs) * (we - ws));
        } else {
          int64_t hs = oh * xs[2] / os[2], he = ((oh + 1) * xs[2] + os[2] - 1) / os[2];
          int64_t ws = ow * xs[3] / os[3], we = ((ow + 1) * xs[3] + os[3] - 1) / os[3];
          float s = 0;
          for (int64_t i = hs; i < he; ++i)
            for (int64_t j = ws; j < we; ++j) s += plane[i * xs[3] + j];
          r = s / ((he - hs) * (we - ws));
        }
        y[(p * os[2] + oh) * os[3] + ow] = r;
      }
  return y;
}

TEST(VulkanOpsTest, PoolingHandChecked) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Floats x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  VulkanBlobBuilder b;
  int in = b.input({1, 1, 4, 4});
  int mx = b.max_pool2d(in, {2}, {}, {}, {}, false);
  int av = b.avg_pool2d(in, {3}, {2}, {1}, true, false);  // 3x3 s2 p1, ceil (3 outputs), exclude pad
  b.output(mx);
  b.output(av);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32({1, 1, 4, 4}, x)}, {mx, av}, &out));
  EXPECT_TRUE(near(out[0], {5, 7, 13, 15}));
  ASSERT_EQ(b.sizes(av), (Sizes{1, 1, 3, 3}));
  // Windows cover rows/cols {0,1}, {1,2,3}, {3}: means of the covered cells only.
  EXPECT_TRUE(near(out[1], {2.5f, 4, 5, 8.5f, 10, 11, 12.5f, 14, 15}));
}

TEST(VulkanOpsTest, PoolingDifferential) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes xs{2, 3, 7, 9};
  Floats x = random_floats(numel(xs), 15);
  VulkanBlobBuilder b;
  int in = b.input(xs);
  int m1 = b.max_pool2d(in, {3}, {2}, {1}, {1}, true);
  int m2 = b.max_pool2d(in, {2, 3}, {1, 2}, {0, 1}, {2, 1}, false);
  int a1 = b.avg_pool2d(in, {3, 2}, {2, 2}, {1, 1}, true, true);
  int a2 = b.avg_pool2d(in, {3}, {2}, {1}, false, false);
  int a3 = b.avg_pool2d(in, {2}, {}, {}, false, true, 3);
  int ad = b.adaptive_avg_pool2d(in, 3, 4);
  int ad1 = b.adaptive_avg_pool2d(in, 1, 1);
  for (int o : {m1, m2, a1, a2, a3, ad, ad1}) b.output(o);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {m1, m2, a1, a2, a3, ad, ad1}, &out));
  EXPECT_TRUE(near(out[0], pool_ref(x, xs, 0, 3, 3, 2, 2, 1, 1, 1, 1, true, 0, b.sizes(m1))));
  EXPECT_TRUE(near(out[1], pool_ref(x, xs, 0, 2, 3, 1, 2, 0, 1, 2, 1, true, 0, b.sizes(m2))));
  EXPECT_TRUE(near(out[2], pool_ref(x, xs, 1, 3, 2, 2, 2, 1, 1, 1, 1, true, 0, b.sizes(a1))));
  EXPECT_TRUE(near(out[3], pool_ref(x, xs, 1, 3, 3, 2, 2, 1, 1, 1, 1, false, 0, b.sizes(a2))));
  EXPECT_TRUE(near(out[4], pool_ref(x, xs, 1, 2, 2, 2, 2, 0, 0, 1, 1, true, 3, b.sizes(a3))));
  EXPECT_TRUE(near(out[5], pool_ref(x, xs, 2, 0, 0, 0, 0, 0, 0, 0, 0, true, 0, b.sizes(ad))));
  EXPECT_TRUE(near(out[6], pool_ref(x, xs, 2, 0, 0, 0, 0, 0, 0, 0, 0, true, 0, b.sizes(ad1))));
}

// Lines shorter than 64 take one invocation each; longer ones (70 here) a cooperative
// workgroup with shared-memory reductions (softmax.comp COOP).
TEST(VulkanOpsTest, SoftmaxAndLogSoftmax) {
  EMBER_SKIP_WITHOUT_VULKAN();
  for (const Sizes& xs : {Sizes{2, 5, 3}, Sizes{3, 70, 2}}) {
    const int64_t total = numel(xs);
    Floats x = random_floats(total, 16, -4, 4);
    x[0] = 80.0f;  // stability
    for (int dim : {1, -1, 0}) {
      for (bool log : {false, true}) {
        VulkanBlobBuilder b;
        int y = b.softmax(b.input(xs), dim, log);
        b.output(y);
        std::vector<Floats> out;
        ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
        int d = dim < 0 ? dim + 3 : dim;
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < d; ++i) outer *= xs[i];
        for (int i = d + 1; i < 3; ++i) inner *= xs[i];
        Floats want(static_cast<size_t>(total));
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t in = 0; in < inner; ++in) {
            double m = -INFINITY, s = 0;
            for (int64_t k = 0; k < xs[d]; ++k) m = std::max<double>(m, x[(o * xs[d] + k) * inner + in]);
            for (int64_t k = 0; k < xs[d]; ++k) s += std::exp(x[(o * xs[d] + k) * inner + in] - m);
            for (int64_t k = 0; k < xs[d]; ++k) {
              double v = x[(o * xs[d] + k) * inner + in] - m;
              want[(o * xs[d] + k) * inner + in] = static_cast<float>(log ? v - std::log(s) : std::exp(v) / s);
            }
          }
        EXPECT_TRUE(near(out[0], want)) << sizes_str(xs) << " dim " << dim << " log " << log;
      }
    }
  }
}

// Rows of 15 (one invocation per row) and of 150 (cooperative workgroup, layer_norm.comp COOP).
TEST(VulkanOpsTest, LayerNormAffineAndPlain) {
  EMBER_SKIP_WITHOUT_VULKAN();
  // 150 columns: a 64-invocation workgroup per row; 1500: 256 invocations.
  for (const Sizes& xs : {Sizes{2, 3, 5}, Sizes{3, 2, 75}, Sizes{2, 3, 500}}) {
    const int64_t cols = xs[1] * xs[2], rows = xs[0];
    Floats x = random_floats(rows * cols, 17, -3, 3), w = random_floats(cols, 18), bias = random_floats(cols, 19);
    for (bool affine : {true, false}) {
      VulkanBlobBuilder b;
      int in = b.input(xs);
      int wt = affine ? b.constant({xs[1], xs[2]}, w) : -1;
      int bt = affine ? b.constant({xs[1], xs[2]}, bias) : -1;
      int y = b.layer_norm(in, wt, bt, 2, 1e-5f);
      b.output(y);
      std::vector<Floats> out;
      ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {y}, &out));
      Floats want(static_cast<size_t>(rows * cols));
      for (int64_t r = 0; r < rows; ++r) {
        double mean = 0, var = 0;
        for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
        mean /= cols;
        for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
        var /= cols;
        for (int64_t c = 0; c < cols; ++c) {
          double v = (x[r * cols + c] - mean) / std::sqrt(var + 1e-5);
          want[r * cols + c] = static_cast<float>(affine ? v * w[c] + bias[c] : v);
        }
      }
      EXPECT_TRUE(near(out[0], want)) << sizes_str(xs) << " affine " << affine;
    }
  }
}

TEST(VulkanOpsTest, MeanOverDims) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes xs{2, 3, 4, 5};
  Floats x = random_floats(numel(xs), 20);
  VulkanBlobBuilder b;
  int in = b.input(xs);
  int m1 = b.mean(in, {-1}, true);
  int m2 = b.mean(in, {2, 1}, false);
  int m3 = b.mean(in, {-2, -1}, true);
  for (int o : {m1, m2, m3}) b.output(o);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32(xs, x)}, {m1, m2, m3}, &out));
  EXPECT_EQ(b.sizes(m1), (Sizes{2, 3, 4, 1}));
  EXPECT_EQ(b.sizes(m2), (Sizes{2, 5}));
  EXPECT_EQ(b.sizes(m3), (Sizes{2, 3, 1, 1}));
  Floats w1(24), w2(10, 0), w3(6, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        float s = 0;
        for (int l = 0; l < 5; ++l) {
          float v = x[((i * 3 + j) * 4 + k) * 5 + l];
          s += v;
          w2[i * 5 + l] += v / 12;
          w3[i * 3 + j] += v / 20;
        }
        w1[(i * 3 + j) * 4 + k] = s / 5;
      }
  EXPECT_TRUE(near(out[0], w1));
  EXPECT_TRUE(near(out[1], w2));
  EXPECT_TRUE(near(out[2], w3));
}

TEST(VulkanOpsTest, PermuteViewCatSlice) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Sizes xs{2, 3, 4};
  Floats x = random_floats(24, 21), z = random_floats(10, 22);
  VulkanBlobBuilder b;
  int in = b.input(xs), in2 = b.input({2, 5});
  int p = b.permute(in, {2, 0, 1});                  // [4, 2, 3]
  int v = b.view(in, {6, -1});                       // [6, 4]
  int c = b.cat({b.view(in, {2, 12}), in2, b.view(in, {2, 12})}, 1);  // [2, 29]
  int s = b.slice(in, 2, 1, -1, 2);                  // [2, 3, 1]
  int s2 = b.slice(p, 0, -3, 100, 2);                // [2, 2, 3]
  for (int o : {p, v, c, s, s2}) b.output(o);
  std::vector<Floats> out;
  ASSERT_TRUE(run(b, {HostTensor::f32(xs, x), HostTensor::f32({2, 5}, z)}, {p, v, c, s, s2}, &out));
  Floats wp(24), wc, ws, ws2;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) wp[(k * 2 + i) * 3 + j] = x[(i * 3 + j) * 4 + k];
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 12; ++k) wc.push_back(x[i * 12 + k]);
    for (int k = 0; k < 5; ++k) wc.push_back(z[i * 5 + k]);
    for (int k = 0; k < 12; ++k) wc.push_back(x[i * 12 + k]);
  }
  for (int i = 0; i < 6; ++i) ws.push_back(x[i * 4 + 1]);
  for (int k : {1, 3})
    for (int r = 0; r < 6; ++r) ws2.push_back(wp[k * 6 + r]);
  EXPECT_EQ(b.sizes(s2), (Sizes{2, 2, 3}));
  EXPECT_TRUE(near(out[0], wp));
  EXPECT_TRUE(near(out[1], x));
  EXPECT_TRUE(near(out[2], wc));
  EXPECT_TRUE(near(out[3], ws));
  EXPECT_TRUE(near(out[4], ws2));
}

TEST(VulkanOpsTest, EmbeddingInt64AndInt32Indices) {
  EMBER_SKIP_WITHOUT_VULKAN();
  Floats w = random_floats(7 * 3, 23);
  std::vector<int64_t> idx{6, 0, 3, 3, 1, 5};
  for (bool i64 : {true, false}) {
    VulkanBlobBuilder b;
    int y = b.embedding(b.constant({7, 3}, w), b.input({2, 3}, i64 ? VkDType::Int64 : VkDType::Int32));
    b.output(y);
    std::vector<Floats> out;
    HostTensor in = i64 ? HostTensor::i64({2, 3}, idx)
                        : HostTensor::i32({2, 3}, std::vector<int32_t>(idx.begin(), idx.end()));
    ASSERT_TRUE(run(b, {in}, {y}, &out));
    EXPECT_EQ(b.sizes(y), (Sizes{2, 3, 3}));
    Floats want;
    for (int64_t i : idx)
      for (int d = 0; d < 3; ++d) want.push_back(w[i * 3 + d]);
    EXPECT_TRUE(near(out[0], want));
  }
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
