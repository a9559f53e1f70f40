// fp16 storage in the Vulkan delegate (blobs exported with --vulkan-fp16): per-op differential
// tests of fp16 graphs against the portable float32 kernels (called through the kernel
// registry on the same float32 inputs and weights), plus the fp16 conversion, fp32
// accumulation, the float32 delegate boundary and the device-lacks-fp16 error.
//
// Tolerance: relative L2 <= 4e-3 against float32 (one fp16 rounding is <= 4.9e-4 relative).
// Each test also checks that the output went through fp16 storage (every value is exactly
// representable in fp16), so a silently-fp32 path fails. Skipped without a Vulkan device or without storageBuffer16BitAccess.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>

#include <gtest/gtest.h>

#include "delegates/vulkan/vulkan_fp16.h"
#include "test/delegates/vulkan/portable_reference.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace testing {
namespace {

constexpr double kTol = 4e-3;  // relative L2 against float32 (measured: 1e-4 .. 1.2e-3)

// Every value survives float -> fp16 -> float unchanged (it came out of an fp16 buffer).
::testing::AssertionResult all_fp16(const Floats& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (half_to_float(float_to_half(v[i])) != v[i] && !std::isnan(v[i]))
      return ::testing::AssertionFailure() << "element " << i << " = " << v[i] << " is not an fp16 value";
  }
  return ::testing::AssertionSuccess();
}

// Checks an fp16 result against the float32 reference and prints the measured error.
::testing::AssertionResult fp16_close(const char* what, const Floats& got, const Floats& want,
                                      double tol = kTol) {
  double e = rel_l2(got, want);
  std::printf("[fp16] %-28s relative L2 %.3g\n", what, e);
  if (!(e <= tol)) return ::testing::AssertionFailure() << what << ": relative L2 " << e << " > " << tol;
  return all_fp16(got);
}

std::vector<uint8_t> half_bytes(const Floats& v) {
  std::vector<uint8_t> b(v.size() * 2);
  floats_to_halves(v.data(), reinterpret_cast<uint16_t*>(b.data()), v.size());
  return b;
}

// A weight as the exporter writes it for fp16 graphs: Float16 bytes.
int weight16(VulkanBlobBuilder& b, const Sizes& s, const Floats& v) {
  std::vector<uint8_t> h = half_bytes(v);
  return b.constant_bytes(s, VkDType::Float16, h.data(), h.size());
}

// Runs a one-output fp16 graph built by `b` on float32 inputs.
::testing::AssertionResult run16(VulkanBlobBuilder& b, std::vector<HostTensor> ins, int y, Floats* out) {
  b.set_fp16(true);
  b.output(y);
  std::vector<Floats> outs;
  ::testing::AssertionResult r = run(b, std::move(ins), {y}, &outs);
  if (r) *out = outs[0];
  return r;
}

TEST(VulkanFp16Test, ConversionMatchesCompilerHalf) {
  // Every fp16 value round-trips exactly (NaNs stay NaN).
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(half_to_float(float_to_half(f)))) << h;
    } else {
      ASSERT_EQ(float_to_half(f), h) << "half " << h << " = " << f;
    }
  }
  // Rounding matches the compiler's _Float16 (round to nearest even) on random bit patterns,
  // including subnormals, ties and overflow.
  std::mt19937 rng(7);
  uint32_t edge[] = {0x477fe000u, 0x477fefffu, 0x477ff000u, 0x33000000u, 0x33000001u, 0x387fe000u,
                     0x38800000u, 0x38801000u, 0x3f801000u, 0x3f803000u, 0x80000001u, 0x7f7fffffu};
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = i < 12 ? edge[i] : rng();
    if (i >= 12 && (i & 1)) bits = (bits & 0x87ffffffu) | 0x30000000u;  // near the fp16 range
    float f;
    std::memcpy(&f, &bits, 4);
    if (std::isnan(f)) continue;
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    ASSERT_EQ(float_to_half(f), rb) << std::hex << "float bits 0x" << bits;
  }
}

// The bulk conversions (8 at a time with F16C where the CPU has it, the inputs and outputs of
// every fp16 execute) agree with the scalar ones bit for bit, NaNs as NaNs, over every half and
// random floats, at lengths that leave a tail after the vector part.
TEST(VulkanFp16Test, BulkConversionsMatchScalar) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> f(all.size());
  halves_to_floats(all.data(), f.data(), all.size());
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = half_to_float(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(f[h])) << h;
    } else {
      ASSERT_EQ(std::memcmp(&f[h], &want, 4), 0) << "half " << h;
    }
  }
  std::mt19937 rng(11);
  for (size_t n : {size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{4099}, size_t{150531}}) {
    std::vector<float> src(n);
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits = rng();
      if (i & 1) bits = (bits & 0x87ffffffu) | 0x30000000u;  // near the fp16 range
      std::memcpy(&src[i], &bits, 4);
    }
    std::vector<uint16_t> got(n);
    floats_to_halves(src.data(), got.data(), n);
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(src[i])) {
        ASSERT_TRUE(std::isnan(half_to_float(got[i]))) << i;
      } else {
        ASSERT_EQ(got[i], float_to_half(src[i])) << "n " << n << " element " << i;
      }
    }
  }
}

TEST(VulkanFp16Test, Conv2dFp16WeightsMatchesPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  struct Case { Sizes xs, ws; int stride, pad, groups; bool bias, fp16_weights; };
  for (const Case& c : {Case{{1, 8, 11, 9}, {16, 8, 3, 3}, 2, 1, 1, true, true},
                        Case{{2, 12, 7, 7}, {12, 1, 3, 3}, 1, 1, 12, true, true},    // depthwise
                        Case{{1, 32, 5, 5}, {24, 8, 1, 1}, 1, 0, 4, false, false}}) { // f32 weights
    Floats x = random_floats(numel(c.xs), 11), w = random_floats(numel(c.ws), 12, -0.3f, 0.3f),
           bias = random_floats(c.ws[0], 13);
    VulkanBlobBuilder b;
    int wid = c.fp16_weights ? weight16(b, c.ws, w) : b.constant(c.ws, w);
    int bid = !c.bias ? -1 : c.fp16_weights ? weight16(b, {c.ws[0]}, bias) : b.constant({c.ws[0]}, bias);
    int y = b.conv2d(b.input(c.xs), wid, bid, {c.stride}, {c.pad}, {1}, c.groups);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(c.xs, x)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::convolution.default",
                      {p.t(c.xs, x), p.t(c.ws, w), c.bias ? p.t({c.ws[0]}, bias) : p.none(),
                       p.ints({c.stride, c.stride}), p.ints({c.pad, c.pad}), p.ints({1, 1}), p.b(false),
                       p.ints({0, 0}), p.i(c.groups), p.out(b.sizes(y))},
                      &want));
    EXPECT_TRUE(fp16_close(("conv2d groups=" + std::to_string(c.groups)).c_str(), got, want));
  }
}

TEST(VulkanFp16Test, LinearAndMatmulMatchPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  {
    Sizes xs{2, 5, 64}, ws{48, 64};
    Floats x = random_floats(numel(xs), 21), w = random_floats(numel(ws), 22, -0.2f, 0.2f),
           bias = random_floats(48, 23);
    VulkanBlobBuilder b;
    int y = b.linear(b.input(xs), weight16(b, ws, w), weight16(b, {48}, bias));
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::linear.default", {p.t(xs, x), p.t(ws, w), p.t({48}, bias), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("linear", got, want));
  }
  struct Case { Sizes a, b; const char* op; };
  for (const Case& c : {Case{{4, 16, 32}, {4, 32, 8}, "aten::bmm.default"},
                        Case{{2, 3, 8, 16}, {16, 12}, "aten::matmul.default"}}) {
    Floats av = random_floats(numel(c.a), 24), bv = random_floats(numel(c.b), 25);
    VulkanBlobBuilder b;
    int ia = b.input(c.a), ib = b.input(c.b);  // in argument order
    int y = b.matmul(ia, ib);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(c.a, av), HostTensor::f32(c.b, bv)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run(c.op, {p.t(c.a, av), p.t(c.b, bv), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close(c.op, got, want));
  }
}

TEST(VulkanFp16Test, BinaryBroadcastMatchesPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  Sizes as{2, 3, 5, 7}, bs{3, 1, 7};
  Floats a = random_floats(numel(as), 31, -2, 2), bv = random_floats(numel(bs), 32, 0.5f, 1.5f);
  struct Case { VkBinary op; const char* kernel; float alpha; };
  for (const Case& c : {Case{VkBinary::Add, "aten::add.Tensor", 0.5f}, Case{VkBinary::Sub, "aten::sub.Tensor", 2.0f},
                        Case{VkBinary::Mul, "aten::mul.Tensor", 1}, Case{VkBinary::Div, "aten::div.Tensor", 1}}) {
    VulkanBlobBuilder b;
    int ia = b.input(as), ib = b.input(bs);  // in argument order
    int y = b.binary(c.op, ia, ib, c.alpha);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(as, a), HostTensor::f32(bs, bv)}, y, &got));
    Portable p;
    std::vector<EValue*> args{p.t(as, a), p.t(bs, bv)};
    if (c.op == VkBinary::Add || c.op == VkBinary::Sub) args.push_back(p.d(c.alpha));
    args.push_back(p.out(b.sizes(y)));
    ASSERT_TRUE(p.run(c.kernel, args, &want));
    EXPECT_TRUE(fp16_close(c.kernel, got, want));
  }
}

TEST(VulkanFp16Test, ActivationsMatchPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  Sizes xs{3, 5, 17};
  Floats x = random_floats(numel(xs), 41, -5, 5);
  struct Case { VkUnary op; const char* kernel; };
  for (const Case& c : {Case{VkUnary::Relu, "aten::relu.default"}, Case{VkUnary::Hardswish, "aten::hardswish.default"},
                        Case{VkUnary::Sigmoid, "aten::sigmoid.default"}, Case{VkUnary::Silu, "aten::silu.default"},
                        Case{VkUnary::Gelu, "aten::gelu.default"}, Case{VkUnary::GeluTanh, "aten::gelu.default"},
                        Case{VkUnary::Tanh, "aten::tanh.default"}, Case{VkUnary::Hardtanh, "aten::hardtanh.default"}}) {
    VulkanBlobBuilder b;
    int y = b.unary(c.op, b.input(xs), -1.5f, 2.5f);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
    Portable p;
    std::vector<EValue*> args{p.t(xs, x)};
    if (c.op == VkUnary::Gelu) args.push_back(p.str("none"));
    if (c.op == VkUnary::GeluTanh) args.push_back(p.str("tanh"));
    if (c.op == VkUnary::Hardtanh) { args.push_back(p.d(-1.5)); args.push_back(p.d(2.5)); }
    args.push_back(p.out(xs));
    ASSERT_TRUE(p.run(c.kernel, args, &want));
    EXPECT_TRUE(fp16_close((std::string(c.kernel) + (c.op == VkUnary::GeluTanh ? " tanh" : "")).c_str(), got, want));
  }
}

TEST(VulkanFp16Test, PoolingMatchesPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  Sizes xs{2, 6, 13, 11};
  Floats x = random_floats(numel(xs), 51, -3, 3);
  for (int mode = 0; mode < 3; ++mode) {
    VulkanBlobBuilder b;
    int in = b.input(xs);
    int y = mode == 0 ? b.max_pool2d(in, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true)
          : mode == 1 ? b.avg_pool2d(in, {3, 3}, {2, 2}, {1, 1}, false, false)
                      : b.adaptive_avg_pool2d(in, 1, 1);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
    Portable p;
    if (mode == 0) {
      ASSERT_TRUE(p.run("aten::max_pool2d.default", {p.t(xs, x), p.ints({3, 3}), p.ints({2, 2}), p.ints({1, 1}),
                                                     p.ints({1, 1}), p.b(true), p.out(b.sizes(y))}, &want));
    } else if (mode == 1) {
      ASSERT_TRUE(p.run("aten::avg_pool2d.default", {p.t(xs, x), p.ints({3, 3}), p.ints({2, 2}), p.ints({1, 1}),
                                                     p.b(false), p.b(false), p.none(), p.out(b.sizes(y))}, &want));
    } else {
      ASSERT_TRUE(p.run("aten::_adaptive_avg_pool2d.default", {p.t(xs, x), p.ints({1, 1}), p.out(b.sizes(y))}, &want));
    }
    const char* names[] = {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"};
    EXPECT_TRUE(fp16_close(names[mode], got, want));
  }
}

TEST(VulkanFp16Test, SoftmaxLayerNormMeanMatchPortable) {
  EMBER_SKIP_WITHOUT_FP16();
  Sizes xs{4, 7, 96};
  Floats x = random_floats(numel(xs), 61, -6, 6);
  for (int dim : {2, 1}) {
    for (bool log : {false, true}) {
      VulkanBlobBuilder b;
      int y = b.softmax(b.input(xs), dim, log);
      Floats got, want;
      ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
      Portable p;
      ASSERT_TRUE(p.run(log ? "aten::_log_softmax.default" : "aten::_softmax.default",
                        {p.t(xs, x), p.i(dim), p.b(false), p.out(xs)}, &want));
      EXPECT_TRUE(fp16_close((std::string(log ? "log_softmax" : "softmax") + " dim " + std::to_string(dim)).c_str(),
                             got, want));
    }
  }
  {
    // Offset inputs (mean ~3): the variance must be computed in fp32 around the mean.
    Floats xo = random_floats(numel(xs), 62, 2, 4), w = random_floats(96, 63, 0.5f, 1.5f), bias = random_floats(96, 64);
    VulkanBlobBuilder b;
    int y = b.layer_norm(b.input(xs), weight16(b, {96}, w), weight16(b, {96}, bias), 1, 1e-5f);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, xo)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::layer_norm.default", {p.t(xs, xo), p.ints({96}), p.t({96}, w), p.t({96}, bias),
                                                   p.d(1e-5), p.b(true), p.out(xs)}, &want));
    EXPECT_TRUE(fp16_close("layer_norm", got, want));
  }
  {
    Sizes ms{2, 16, 7, 7};
    Floats xm = random_floats(numel(ms), 65, -2, 2);
    VulkanBlobBuilder b;
    int y = b.mean(b.input(ms), {2, 3}, true);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(ms, xm)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::mean.dim", {p.t(ms, xm), p.ints({2, 3}), p.b(true), p.none(), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("mean", got, want));
  }
}

TEST(VulkanFp16Test, CopiesAndEmbeddingAreExactFp16) {
  EMBER_SKIP_WITHOUT_FP16();
  // permute / slice / cat move fp16 values unchanged: the result is exactly the input rounded
  // to fp16, and within fp16 rounding of the portable result.
  Sizes xs{3, 4, 10};
  Floats x = random_floats(numel(xs), 71, -3, 3), x2 = random_floats(numel(xs), 72, -3, 3);
  Floats xr(x.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = half_to_float(float_to_half(x[i]));
  {
    VulkanBlobBuilder b;
    int y = b.permute(b.input(xs), {2, 0, 1});
    Floats got, want, want_r;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::permute.default", {p.t(xs, x), p.ints({2, 0, 1}), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("permute", got, want));
    Portable pr;
    ASSERT_TRUE(pr.run("aten::permute.default", {pr.t(xs, xr), pr.ints({2, 0, 1}), pr.out(b.sizes(y))}, &want_r));
    EXPECT_EQ(got, want_r);
  }
  {
    VulkanBlobBuilder b;
    int y = b.slice(b.input(xs), 2, 1, 9, 3);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::slice.Tensor", {p.t(xs, x), p.i(2), p.i(1), p.i(9), p.i(3), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("slice", got, want));
  }
  {
    VulkanBlobBuilder b;
    int y = b.cat({b.input(xs), b.input(xs)}, 1);
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::f32(xs, x), HostTensor::f32(xs, x2)}, y, &got));
    Portable p;
    ASSERT_TRUE(p.run("aten::cat.default", {p.list({p.t(xs, x), p.t(xs, x2)}), p.i(1), p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("cat", got, want));
  }
  {
    Sizes ws{50, 32}, is{3, 5};
    Floats w = random_floats(numel(ws), 73);
    std::vector<int64_t> idx{0, 49, 7, -1, 3, 3, 12, 48, 1, 0, 25, 30, 2, 9, 11};
    VulkanBlobBuilder b;
    int y = b.embedding(weight16(b, ws, w), b.input(is, VkDType::Int64));
    Floats got, want;
    ASSERT_TRUE(run16(b, {HostTensor::i64(is, idx)}, y, &got));
    idx[3] = 49;  // the portable kernel does not wrap negative indices; the shader does
    Portable p;
    ASSERT_TRUE(p.run("aten::embedding.default", {p.t(ws, w), p.t64(is, idx), p.i(-1), p.b(false), p.b(false),
                                                  p.out(b.sizes(y))}, &want));
    EXPECT_TRUE(fp16_close("embedding", got, want));
  }
}

TEST(VulkanFp16Test, ViewsAndCopiesOfFp16Weights) {
  EMBER_SKIP_WITHOUT_FP16();
  // As in ViT: a position embedding weight viewed, sliced and permuted, then added to the input;
  // also a permuted weight as a graph output (copies of an fp16 weight are float32 tensors).
  Sizes ps{1, 6, 8};
  Floats pos = random_floats(48, 75), x = random_floats(40, 76);
  VulkanBlobBuilder b;
  int w = weight16(b, ps, pos);
  int sl = b.slice(b.view(w, {6, 8}), 0, 1, 6);
  int y = b.binary(VkBinary::Add, b.input({5, 8}), sl);
  int t = b.permute(w, {0, 2, 1});
  b.set_fp16(true);
  b.output(y);
  b.output(t);
  std::vector<Floats> outs;
  ASSERT_TRUE(run(b, {HostTensor::f32({5, 8}, x)}, {y, t}, &outs));
  Floats want_y(40), want_t(48);
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 8; ++c) want_y[r * 8 + c] = x[r * 8 + c] + pos[(r + 1) * 8 + c];
  for (int c = 0; c < 8; ++c)
    for (int r = 0; r < 6; ++r) want_t[c * 6 + r] = half_to_float(float_to_half(pos[r * 8 + c]));
  EXPECT_TRUE(fp16_close("add of a sliced fp16 weight", outs[0], want_y));
  EXPECT_EQ(outs[1], want_t);
}

TEST(VulkanFp16Test, IntTensorsKeep32BitCopies) {
  EMBER_SKIP_WITHOUT_FP16();
  // In an fp16 graph only float tensors are fp16: an int32 permute must stay exact.
  Sizes xs{3, 70000};
  std::vector<int32_t> v(static_cast<size_t>(numel(xs)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7919 - 1000000);
  VulkanBlobBuilder b;
  b.set_fp16(true);
  int y = b.permute(b.input(xs, VkDType::Int32), {1, 0});
  b.output(y);
  ASSERT_TRUE(b.ok()) << b.error();
  Delegate d;
  ASSERT_EQ(d.init(b.build()), Error::Ok) << d.message();
  std::vector<HostTensor> ins{HostTensor::i32(xs, v)};
  std::vector<HostTensor> outs{HostTensor::i32({70000, 3}, std::vector<int32_t>(v.size(), 0))};
  ASSERT_EQ(d.execute(ins, outs), Error::Ok) << d.message();
  const int32_t* o = reinterpret_cast<const int32_t*>(outs[0].bytes.data());
  for (int64_t r = 0; r < 70000; ++r)
    for (int64_t c = 0; c < 3; ++c) ASSERT_EQ(o[r * 3 + c], v[static_cast<size_t>(c * 70000 + r)]) << r << "," << c;
}

TEST(VulkanFp16Test, AccumulatesInFp32) {
  EMBER_SKIP_WITHOUT_FP16();
  // Summing 4096 ones in fp16 stalls at 2048 (the spacing there is 2); fp32 accumulation gives
  // 4096 exactly, which fp16 storage holds exactly.
  const int K = 4096;
  Floats ones(K, 1.0f);
  {
    VulkanBlobBuilder b;
    int y = b.linear(b.input({1, K}), weight16(b, {1, K}, ones), -1);
    Floats got;
    ASSERT_TRUE(run16(b, {HostTensor::f32({1, K}, ones)}, y, &got));
    EXPECT_EQ(got, Floats{4096.0f});
  }
  {
    VulkanBlobBuilder b;
    int y = b.conv2d(b.input({1, K, 1, 1}), weight16(b, {1, K, 1, 1}, ones), -1, {1}, {0}, {1}, 1);
    Floats got;
    ASSERT_TRUE(run16(b, {HostTensor::f32({1, K, 1, 1}, ones)}, y, &got));
    EXPECT_EQ(got, Floats{4096.0f});
  }
  {
    // mean of 4096 values of 0.999..1.001 (~1): an fp16 running sum would be off by ~50%.
    Floats x = random_floats(K, 81, 0.999f, 1.001f);
    VulkanBlobBuilder b;
    int y = b.mean(b.input({1, K}), {1}, false);
    Floats got;
    ASSERT_TRUE(run16(b, {HostTensor::f32({1, K}, x)}, y, &got));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_NEAR(got[0], 1.0f, 1e-3f);
  }
  {
    // softmax over 4096 equal logits: each 1/4096 (exact in fp16).
    Floats x(K, 0.25f);
    VulkanBlobBuilder b;
    int y = b.softmax(b.input({1, K}), 1);
    Floats got;
    ASSERT_TRUE(run16(b, {HostTensor::f32({1, K}, x)}, y, &got));
    for (float v : got) ASSERT_EQ(v, 1.0f / 4096.0f);
  }
}

TEST(VulkanFp16Test, BoundaryStaysFloat32AndRepeats) {
  EMBER_SKIP_WITHOUT_FP16();
  // Two inputs, two outputs, several runs: arguments are float32 tensors of the exported shapes.
  Sizes xs{5, 9};
  Floats a = random_floats(45, 91), c = random_floats(45, 92);
  VulkanBlobBuilder b;
  b.set_fp16(true);
  int ia = b.input(xs), ic = b.input(xs);
  int s = b.binary(VkBinary::Add, ia, ic), r = b.unary(VkUnary::Relu, ia);
  b.output(s);
  b.output(r);
  std::vector<Floats> outs;
  ASSERT_TRUE(run(b, {HostTensor::f32(xs, a), HostTensor::f32(xs, c)}, {s, r}, &outs, 3));
  Floats want_s(45), want_r(45);
  for (int i = 0; i < 45; ++i) {
    want_s[i] = a[i] + c[i];
    want_r[i] = std::max(a[i], 0.0f);
  }
  EXPECT_TRUE(fp16_close("add (2 in, 2 out)", outs[0], want_s));
  EXPECT_TRUE(fp16_close("relu (2 in, 2 out)", outs[1], want_r));
  // A float16 argument is rejected: the boundary is float32.
  Delegate d;
  ASSERT_EQ(d.init(b.build()), Error::Ok) << d.message();
  std::vector<HostTensor> ins{HostTensor::f32(xs, a), HostTensor::f32(xs, c)};
  std::vector<HostTensor> bad{HostTensor::f32(xs, a), HostTensor::f32(xs, a)};
  bad[1].dtype = ScalarType::Float16;
  EXPECT_EQ(d.execute(ins, bad), Error::InvalidArgument);
}

TEST(VulkanFp16Test, DeviceWithoutFp16StorageIsNotSupported) {
  EMBER_SKIP_WITHOUT_VULKAN();
  VulkanBlobBuilder b;
  b.set_fp16(true);
  int y = b.unary(VkUnary::Relu, b.input({4}));
  b.output(y);
  set_hide_fp16_features(true);
  Delegate d;
  Error e = d.init(b.build());
  set_hide_fp16_features(false);
  EXPECT_EQ(e, Error::NotSupported);
  EXPECT_NE(std::string(d.message()).find("re-export without --vulkan-fp16"), std::string::npos) << d.message();
}

TEST(VulkanFp16Test, Float16InputInBlobIsRejected) {
  EMBER_SKIP_WITHOUT_FP16();
  VulkanBlobBuilder b;
  b.set_fp16(true);
  int y = b.unary(VkUnary::Relu, b.input({4}, VkDType::Float16));
  b.output(y);
  Delegate d;
  EXPECT_EQ(d.init(b.build()), Error::InvalidProgram);
  EXPECT_NE(std::string(d.message()).find("only constants"), std::string::npos) << d.message();
}

TEST(VulkanFp16Test, Fp32BlobWithFloat16WeightIsRejected) {
  EMBER_SKIP_WITHOUT_VULKAN();
  // Float16 weights are only meaningful in fp16 graphs; an fp32 graph reports them.
  VulkanBlobBuilder b;
  int y = b.linear(b.input({1, 4}), weight16(b, {2, 4}, Floats(8, 1.0f)), -1);
  b.output(y);
  Delegate d;
  EXPECT_EQ(d.init(b.build()), Error::NotSupported) << d.message();
}

}  // namespace
}  // namespace testing
}  // namespace vulkan
}  // namespace ember
