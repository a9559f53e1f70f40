// conv2d_gemm.comp, the implicit-GEMM convolution (runtime/conv_gemm_plan.h), against the
// portable kernel over shapes that cross every edge: partial 64x64 tiles in both directions,
// reductions that are not a multiple of the 16-deep k step, strides, padding, dilation,
// groups, 1x1 and 7x7 windows, batches, and the reduction split 1, 3 and the planner's ways
// (the partial sums through the scratch buffer and the reducing dispatch). Two convolutions
// in one graph share the scratch buffer. ResNet-style blocks: the residual adds and the relus
// run in the convolutions' epilogues (runtime/dispatch_fusion.h), seven dispatches fewer, the
// same numbers. Skips without a Vulkan device (lavapipe in CI).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/conv_gemm_plan.h"
#include "test/delegates/vulkan/portable_reference.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

struct ConvCase {
  Sizes xs, ws;
  std::vector<int32_t> stride, pad, dil;
  int groups;
  bool bias;
  VkActivation act;
};

Floats portable_conv(const ConvCase& c, const Floats& x, const Floats& w, const Floats& bias, const Sizes& out) {
  Portable p;
  Floats want;
  auto pair = [](const std::vector<int32_t>& v) {
    return std::vector<int64_t>{v[0], v.size() > 1 ? v[1] : v[0]};
  };
  EXPECT_TRUE(p.run("aten::convolution.default",
                    {p.t(c.xs, x), p.t(c.ws, w), c.bias ? p.t({c.ws[0]}, bias) : p.none(), p.ints(pair(c.stride)),
                     p.ints(pair(c.pad)), p.ints(pair(c.dil)), p.b(false), p.ints({0, 0}), p.i(c.groups), p.out(out)},
                    &want));
  return want;
}

std::string describe(const ConvCase& c) {
  return sizes_str(c.xs) + " * " + sizes_str(c.ws) + " groups " + std::to_string(c.groups);
}

// The env overrides for one scope (tests in one binary run one at a time).
struct Env {
  Env(const char* gemm, const char* splits) {
    setenv("EMBER_VULKAN_CONV_GEMM", gemm, 1);
    if (splits != nullptr) setenv("EMBER_VULKAN_CONV_SPLITS", splits, 1);
  }
  ~Env() {
    unsetenv("EMBER_VULKAN_CONV_GEMM");
    unsetenv("EMBER_VULKAN_CONV_SPLITS");
  }
};

TEST(VulkanConvGemmTest, MatchesPortableOverShapesAndSplits) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const VkActivation none{}, relu = VkActivation::relu(), relu6 = VkActivation::relu6();
  const ConvCase cases[] = {
      {{1, 64, 14, 14}, {70, 64, 3, 3}, {1}, {1}, {1}, 1, true, relu},           // 2 x 4 tiles, both partial
      {{2, 6, 11, 13}, {40, 3, 3, 2}, {2, 1}, {1, 1}, {1, 2}, 2, true, relu6},   // groups, dilation, batch
      {{1, 3, 23, 23}, {16, 3, 7, 7}, {2}, {3}, {1}, 1, true, relu},            // stem: k = 147
      {{1, 32, 9, 9}, {48, 32, 1, 1}, {1}, {0}, {1}, 1, false, none},           // pointwise, no bias
      {{1, 256, 7, 7}, {32, 256, 3, 3}, {1}, {1}, {1}, 1, true, none},          // deep k over 49 pixels
      {{1, 24, 10, 10}, {96, 24, 3, 3}, {2}, {0}, {1}, 1, true, relu},          // stride 2, no padding
      {{2, 96, 1, 1}, {24, 96, 1, 1}, {1}, {0}, {1}, 1, true, relu},            // 1x1 image: as a linear layer
  };
  for (const char* splits : {"1", "3", static_cast<const char*>(nullptr)}) {
    for (const ConvCase& c : cases) {
      Floats x = random_floats(numel(c.xs), 50), w = random_floats(numel(c.ws), 51, -0.5f, 0.5f),
             bias = random_floats(c.ws[0], 52);
      VulkanBlobBuilder b;
      int y = b.conv2d(b.input(c.xs), b.constant(c.ws, w), c.bias ? b.constant({c.ws[0]}, bias) : -1, c.stride,
                       c.pad, c.dil, c.groups, c.act);
      b.output(y);
      std::vector<Floats> out;
      {
        Env env("1", splits);
        ASSERT_TRUE(run(b, {HostTensor::f32(c.xs, x)}, {y}, &out)) << describe(c);
      }
      Floats want = portable_conv(c, x, w, bias, b.sizes(y));
      if (c.act.clamp) {
        for (float& v : want) v = std::min(std::max(v, c.act.min), c.act.max);
      }
      EXPECT_TRUE(near(out[0], want, 2e-5f)) << describe(c) << " splits " << (splits ? splits : "planned");
    }
  }
}

// The planner splits deep reductions over few tiles and leaves shallow or wide ones whole.
TEST(VulkanConvGemmTest, PlanSplitsDeepReductionsOnly) {
  unsetenv("EMBER_VULKAN_CONV_GEMM");
  unsetenv("EMBER_VULKAN_CONV_SPLITS");
  unsetenv("EMBER_VULKAN_CONV_GEMM_WG");
  // ResNet18's 7x7x512 3x3 layer: 8 tiles, k 4608 (288 steps).
  ConvGemmPlan deep = conv_gemm_plan(1, 1, 512, 49, 4608, 1024, 49152, true);
  ASSERT_TRUE(deep.use);
  EXPECT_GT(deep.splits, 1);
  EXPECT_EQ(deep.chunk % kConvGemmStep, 0);
  EXPECT_GE(deep.chunk * deep.splits, 4608);
  EXPECT_LT(deep.chunk * (deep.splits - 1), 4608);  // no empty range
  EXPECT_EQ(deep.workgroups, 8 * deep.splits);
  EXPECT_EQ(deep.partial_floats, deep.splits * 512 * 49);
  // A stem: k 147 (10 steps) over 12544 pixels: many tiles, at most 2 ranges of >= 4 steps.
  ConvGemmPlan stem = conv_gemm_plan(1, 1, 64, 12544, 147, 1024, 49152, true);
  ASSERT_TRUE(stem.use);
  EXPECT_LE(stem.splits, 2);
  // Depthwise, tiny planes, dynamic shapes and small devices keep conv2d.comp.
  EXPECT_FALSE(conv_gemm_plan(1, 32, 1, 3136, 9, 1024, 49152, true).use);
  EXPECT_FALSE(conv_gemm_plan(1, 1, 64, 1, 256, 1024, 49152, true).use);
  EXPECT_FALSE(conv_gemm_plan(1, 1, 64, 3136, 576, 1024, 49152, false).use);
  EXPECT_FALSE(conv_gemm_plan(1, 1, 64, 3136, 576, 128, 49152, true).use);
  EXPECT_FALSE(conv_gemm_plan(1, 1, 64, 3136, 576, 1024, 16384, true).use);  // Vulkan's minimum shared memory
  setenv("EMBER_VULKAN_CONV_GEMM", "0", 1);
  EXPECT_FALSE(conv_gemm_plan(1, 1, 512, 49, 4608, 1024, 49152, true).use);
  unsetenv("EMBER_VULKAN_CONV_GEMM");
}

// Two split convolutions in a row share the scratch buffer; the second reads the first's output;
// three executes in a row, a new input each time.
TEST(VulkanConvGemmTest, ChainedSplitConvolutionsShareTheScratch) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const ConvCase c1{{1, 128, 8, 8}, {64, 128, 3, 3}, {1}, {1}, {1}, 1, true, VkActivation::relu()};
  const ConvCase c2{{1, 64, 8, 8}, {96, 64, 3, 3}, {1}, {1}, {1}, 1, true, VkActivation{}};
  Floats w1 = random_floats(numel(c1.ws), 61, -0.2f, 0.2f),
         b1 = random_floats(64, 62), w2 = random_floats(numel(c2.ws), 63, -0.2f, 0.2f), b2 = random_floats(96, 64);
  VulkanBlobBuilder b;
  int h = b.conv2d(b.input(c1.xs), b.constant(c1.ws, w1), b.constant({64}, b1), {1}, {1}, {1}, 1, c1.act);
  int y = b.conv2d(h, b.constant(c2.ws, w2), b.constant({96}, b2), {1}, {1}, {1}, 1, c2.act);
  b.output(y);
  Delegate del;
  {
    Env env("1", "4");
    ASSERT_EQ(del.init(b.build()), Error::Ok) << del.message();
  }
  // A new input each time: an execute that left a buffer stale would show the old output.
  for (int rep = 0; rep < 3; ++rep) {
    const Floats xr = random_floats(numel(c1.xs), 60 + 10 * rep);
    Floats mid = portable_conv(c1, xr, w1, b1, b.sizes(h));
    for (float& v : mid) v = std::max(v, 0.0f);
    const Floats want = portable_conv(c2, mid, w2, b2, b.sizes(y));
    std::vector<HostTensor> ins{HostTensor::f32(c1.xs, xr)};
    std::vector<HostTensor> os{nan_out(b.sizes(y))};
    ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
    EXPECT_TRUE(near(values(os[0]), want, 2e-5f)) << "execute " << rep;
  }
}


// Two ResNet blocks and a depthwise conv: y1 = relu(conv2(relu(conv1(x))) + x);
// y2 = relu(conv4(relu(conv3(y1))) + conv5(y1)) (the add goes into conv5, the later conv, with
// conv4's result as its residual); dw = relu6(depthwise(y2)) (the direct loop applies the clamp).
// A conv whose result is also a graph output keeps its own write (not fused).
TEST(VulkanConvGemmTest, ResidualBlocksFuseAddsAndActivations) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const Sizes xs{1, 32, 10, 10};
  struct W { Sizes s; Floats w, b; };
  auto weight = [](Sizes s, uint32_t seed) {
    return W{s, random_floats(numel(s), seed, -0.15f, 0.15f), random_floats(s[0], seed + 1, -0.5f, 0.5f)};
  };
  const W w1 = weight({32, 32, 3, 3}, 70), w2 = weight({32, 32, 3, 3}, 72), w3 = weight({64, 32, 3, 3}, 74),
          w4 = weight({64, 64, 3, 3}, 76), w5 = weight({64, 32, 1, 1}, 78), wd = weight({64, 1, 3, 3}, 80);
  const Floats x = random_floats(numel(xs), 69);
  auto build = [&](VulkanBlobBuilder& b, int* side) {
    auto conv = [&](int in, const W& w, int stride, int pad, int groups, VkActivation act = {}) {
      return b.conv2d(in, b.constant(w.s, w.w), b.constant({w.s[0]}, w.b), {stride}, {pad}, {1}, groups, act);
    };
    const int in = b.input(xs);
    const int h1 = b.unary(VkUnary::Relu, conv(in, w1, 1, 1, 1), 0.0f);
    const int y1 = b.unary(VkUnary::Relu, b.binary(VkBinary::Add, conv(h1, w2, 1, 1, 1), in), 0.0f);
    const int h3 = b.unary(VkUnary::Relu, conv(y1, w3, 2, 1, 1), 0.0f);
    const int c4 = conv(h3, w4, 1, 1, 1);
    const int c5 = conv(y1, w5, 2, 0, 1);
    const int y2 = b.unary(VkUnary::Relu, b.binary(VkBinary::Add, c4, c5), 0.0f);
    const int dw = b.unary(VkUnary::Clamp, conv(y2, wd, 1, 1, 64), 0.0f, 6.0f);
    *side = conv(y2, weight({16, 64, 1, 1}, 82), 1, 0, 1);  // a graph output: not fused
    b.output(dw);
    b.output(*side);
    return dw;
  };
  size_t dispatches[2] = {0, 0};
  std::vector<Floats> outs[2];
  for (int fuse = 0; fuse < 2; ++fuse) {
    setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
    VulkanBlobBuilder b;
    int side = -1;
    const int dw = build(b, &side);
    Delegate del;
    const Error e = del.init(b.build());
    unsetenv("EMBER_VULKAN_FUSE");
    ASSERT_EQ(e, Error::Ok) << del.message();
    dispatches[fuse] = del.graph()->num_dispatches();
    std::vector<HostTensor> ins{HostTensor::f32(xs, x)};
    std::vector<HostTensor> os{nan_out(b.sizes(dw)), nan_out(b.sizes(side))};
    for (int rep = 0; rep < 2; ++rep) ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
    for (HostTensor& o : os) outs[fuse].push_back(values(o));
  }
  EXPECT_EQ(dispatches[0] - dispatches[1], 7u) << "2 adds, 4 relus and the relu6 fused";
  // The reference: portable convs, host adds and clamps.
  auto pconv = [](const Floats& in, const Sizes& is, const W& w, int stride, int pad, int groups, Sizes* os) {
    const int64_t oh = (is[2] + 2 * pad - w.s[2]) / stride + 1, ow = (is[3] + 2 * pad - w.s[3]) / stride + 1;
    *os = Sizes{is[0], w.s[0], oh, ow};
    ConvCase c{is, w.s, {stride}, {pad}, {1}, groups, true, VkActivation{}};
    return portable_conv(c, in, w.w, w.b, *os);
  };
  auto clamp = [](Floats v, float lo, float hi) {
    for (float& f : v) f = std::min(std::max(f, lo), hi);
    return v;
  };
  auto plus = [](Floats a, const Floats& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    return a;
  };
  const float inf = INFINITY;
  Sizes s1, s2, s3, s4, s5, sd, ss;
  const Floats h1 = clamp(pconv(x, xs, w1, 1, 1, 1, &s1), 0, inf);
  const Floats y1 = clamp(plus(pconv(h1, s1, w2, 1, 1, 1, &s2), x), 0, inf);
  const Floats h3 = clamp(pconv(y1, s2, w3, 2, 1, 1, &s3), 0, inf);
  const Floats y2 = clamp(plus(pconv(h3, s3, w4, 1, 1, 1, &s4), pconv(y1, s2, w5, 2, 0, 1, &s5)), 0, inf);
  const Floats dw = clamp(pconv(y2, s4, wd, 1, 1, 64, &sd), 0, 6);
  const Floats side = pconv(y2, s4, weight({16, 64, 1, 1}, 82), 1, 0, 1, &ss);
  for (int fuse = 0; fuse < 2; ++fuse) {
    EXPECT_TRUE(near(outs[fuse][0], dw, 2e-5f)) << "fuse " << fuse;
    EXPECT_TRUE(near(outs[fuse][1], side, 2e-5f)) << "fuse " << fuse;
  }
}


// An EfficientNet block: expand conv -> silu -> depthwise -> silu -> squeeze-and-excitation
// (global mean over a 16x16 plane: the cooperative pooling; two 1x1-image convs: linear layers,
// silu, sigmoid) -> scale -> project conv. Fused, the four activations run in their convs'
// epilogues (the GEMM's, the direct loop's) and the project conv computes the excitation's second
// linear itself (or both, EMBER_VULKAN_EXCITE_IN_CONV=2) and scales its input channels as it
// reads them (no dispatch for that linear nor the mul); both versions match the reference, for
// one and two images, with the project conv's reduction whole and split (each range computes its
// own channels' scales).
TEST(VulkanConvGemmTest, EfficientNetBlockFusesSiluExcitationAndPoolsCooperatively) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct W { Sizes s; Floats w, b; };
  auto weight = [](Sizes s, uint32_t seed) {
    return W{s, random_floats(numel(s), seed, -0.3f, 0.3f), random_floats(s[0], seed + 1, -0.5f, 0.5f)};
  };
  const W we = weight({64, 16, 1, 1}, 91), wd = weight({64, 1, 3, 3}, 93), w1 = weight({8, 64, 1, 1}, 95),
          w2 = weight({64, 8, 1, 1}, 97), wp = weight({24, 64, 1, 1}, 99);
  auto silu = [](Floats v) {
    for (float& f : v) f = f / (1.0f + std::exp(-f));
    return v;
  };
  auto pconv = [](const Floats& in, const Sizes& is, const W& w, int pad, int groups) {
    const Sizes os{is[0], w.s[0], is[2] + 2 * pad - w.s[2] + 1, is[3] + 2 * pad - w.s[3] + 1};
    ConvCase c{is, w.s, {1}, {pad}, {1}, groups, true, VkActivation{}};
    return portable_conv(c, in, w.w, w.b, os);
  };
  for (int64_t images : {1, 2}) {
    const Sizes xs{images, 16, 16, 16};
    const Floats x = random_floats(numel(xs), 90);
    // The reference: portable convs, host pooling, silu, sigmoid and scale.
    const Floats e = silu(pconv(x, xs, we, 0, 1));
    const Sizes es{images, 64, 16, 16};
    const Floats d = silu(pconv(e, es, wd, 1, 64));
    Floats pooled(static_cast<size_t>(images * 64), 0.0f);
    for (int64_t c = 0; c < images * 64; ++c) {
      double sum = 0;
      for (int i = 0; i < 256; ++i) sum += d[static_cast<size_t>(c * 256 + i)];
      pooled[static_cast<size_t>(c)] = static_cast<float>(sum / 256);
    }
    Floats sq = pconv(silu(pconv(pooled, {images, 64, 1, 1}, w1, 0, 1)), {images, 8, 1, 1}, w2, 0, 1);
    for (float& f : sq) f = 1.0f / (1.0f + std::exp(-f));
    Floats scaled = d;
    for (int64_t c = 0; c < images * 64; ++c)
      for (int i = 0; i < 256; ++i) scaled[static_cast<size_t>(c * 256 + i)] *= sq[static_cast<size_t>(c)];
    const Floats want = pconv(scaled, es, wp, 0, 1);
    // The default: fc1 keeps its dispatch, the conv computes fc2 from its output; mode 2: the
    // conv computes fc1 too.
    for (const char* mode : {static_cast<const char*>(nullptr), "2"})
    for (const char* splits : {static_cast<const char*>(nullptr), "2"}) {
      const std::string what = std::to_string(images) + " images, splits " + (splits ? splits : "planned") +
                               ", excitation mode " + (mode ? mode : "default");
      size_t dispatches[2] = {0, 0};
      for (int fuse = 0; fuse < 2; ++fuse) {
        setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
        if (splits != nullptr) setenv("EMBER_VULKAN_CONV_SPLITS", splits, 1);
        if (mode != nullptr) setenv("EMBER_VULKAN_EXCITE_IN_CONV", mode, 1);
        VulkanBlobBuilder b;
        auto conv = [&](int in, const W& w, int pad, int groups) {
          return b.conv2d(in, b.constant(w.s, w.w), b.constant({w.s[0]}, w.b), {1}, {pad}, {1}, groups);
        };
        const int in = b.input(xs);
        const int ex = b.unary(VkUnary::Silu, conv(in, we, 0, 1));
        const int dw = b.unary(VkUnary::Silu, conv(ex, wd, 1, 64));
        const int pool = b.adaptive_avg_pool2d(dw, 1, 1);
        const int s = b.unary(VkUnary::Sigmoid, conv(b.unary(VkUnary::Silu, conv(pool, w1, 0, 1)), w2, 0, 1));
        const int y = conv(b.binary(VkBinary::Mul, dw, s), wp, 0, 1);
        b.output(y);
        Delegate del;
        const Error err = del.init(b.build());
        unsetenv("EMBER_VULKAN_FUSE");
        unsetenv("EMBER_VULKAN_CONV_SPLITS");
        unsetenv("EMBER_VULKAN_EXCITE_IN_CONV");
        ASSERT_EQ(err, Error::Ok) << del.message();
        dispatches[fuse] = del.graph()->num_dispatches();
        std::vector<HostTensor> ins{HostTensor::f32(xs, x)};
        std::vector<HostTensor> os{nan_out(b.sizes(y))};
        ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
        EXPECT_TRUE(near(values(os[0]), want, 5e-5f)) << what << ", fuse " << fuse;
      }
      EXPECT_EQ(dispatches[0] - dispatches[1], mode ? 7u : 6u)
          << what << ": silu (expand, depthwise, squeeze), sigmoid, the scale, the excitation linears";
    }
  }
}


// Linear layers of >= 16 rows run on the same tiles (ROWS_MAJOR): row-major x and y, 2-D and 3-D
// inputs, with and without bias, split 1, 3 and the planner's ways, against a double loop.
TEST(VulkanConvGemmTest, LinearLayersMatchReference) {
  EMBER_SKIP_WITHOUT_VULKAN();
  struct LinCase { Sizes xs; int64_t n; bool bias; };
  const LinCase cases[] = {{{197, 192}, 576, true}, {{37, 41}, 45, false}, {{3, 20, 64}, 130, true}, {{64, 768}, 192, true}};
  for (const char* splits : {"1", "3", static_cast<const char*>(nullptr)}) {
    for (const LinCase& c : cases) {
      const int64_t k = c.xs.back(), m = numel(c.xs) / k;
      const Floats x = random_floats(numel(c.xs), 100), w = random_floats(c.n * k, 101, -0.2f, 0.2f),
                   bias = random_floats(c.n, 102);
      VulkanBlobBuilder b;
      const int y = b.linear(b.input(c.xs), b.constant({c.n, k}, w), c.bias ? b.constant({c.n}, bias) : -1);
      b.output(y);
      std::vector<Floats> out;
      {
        Env env("1", splits);
        ASSERT_TRUE(run(b, {HostTensor::f32(c.xs, x)}, {y}, &out)) << sizes_str(c.xs);
      }
      Floats want(static_cast<size_t>(m * c.n));
      for (int64_t r = 0; r < m; ++r)
        for (int64_t o = 0; o < c.n; ++o) {
          double acc = c.bias ? bias[o] : 0.0;
          for (int64_t i = 0; i < k; ++i) acc += static_cast<double>(x[r * k + i]) * w[o * k + i];
          want[r * c.n + o] = static_cast<float>(acc);
        }
      EXPECT_TRUE(near(out[0], want, 2e-5f)) << sizes_str(c.xs) << " x " << c.n << " splits " << (splits ? splits : "planned");
    }
  }
}

// A transformer MLP: y = fc2(gelu(fc1(x))) + x. Fused, the gelu runs in fc1's epilogue and the
// residual add in fc2's (two dispatches fewer), with the unfused numbers.
TEST(VulkanConvGemmTest, TransformerMlpFusesGeluAndResidual) {
  EMBER_SKIP_WITHOUT_VULKAN();
  const int64_t m = 50, d = 32, h = 64;
  const Floats x = random_floats(m * d, 110), w1 = random_floats(h * d, 111, -0.3f, 0.3f), b1 = random_floats(h, 112),
               w2 = random_floats(d * h, 113, -0.3f, 0.3f), b2 = random_floats(d, 114);
  size_t dispatches[2] = {0, 0};
  Floats outs[2];
  for (int fuse = 0; fuse < 2; ++fuse) {
    setenv("EMBER_VULKAN_FUSE", fuse ? "1" : "0", 1);
    VulkanBlobBuilder b;
    const int in = b.input({m, d});
    const int hid = b.unary(VkUnary::Gelu, b.linear(in, b.constant({h, d}, w1), b.constant({h}, b1)));
    const int y = b.binary(VkBinary::Add, b.linear(hid, b.constant({d, h}, w2), b.constant({d}, b2)), in);
    b.output(y);
    Delegate del;
    const Error err = del.init(b.build());
    unsetenv("EMBER_VULKAN_FUSE");
    ASSERT_EQ(err, Error::Ok) << del.message();
    dispatches[fuse] = del.graph()->num_dispatches();
    std::vector<HostTensor> ins{HostTensor::f32({m, d}, x)};
    std::vector<HostTensor> os{nan_out({m, d})};
    ASSERT_EQ(del.execute(ins, os), Error::Ok) << del.message();
    outs[fuse] = values(os[0]);
  }
  EXPECT_EQ(dispatches[0] - dispatches[1], 2u) << "the gelu and the residual add";
  Floats want(static_cast<size_t>(m * d));
  for (int64_t r = 0; r < m; ++r) {
    std::vector<double> hv(static_cast<size_t>(h));
    for (int64_t o = 0; o < h; ++o) {
      double acc = b1[o];
      for (int64_t i = 0; i < d; ++i) acc += static_cast<double>(x[r * d + i]) * w1[o * d + i];
      hv[o] = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
    }
    for (int64_t o = 0; o < d; ++o) {
      double acc = b2[o] + x[r * d + o];
      for (int64_t i = 0; i < h; ++i) acc += hv[i] * w2[o * h + i];
      want[r * d + o] = static_cast<float>(acc);
    }
  }
  for (int fuse = 0; fuse < 2; ++fuse) EXPECT_TRUE(near(outs[fuse], want, 5e-5f)) << "fuse " << fuse;
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
