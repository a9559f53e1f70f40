// Every supported op through the "xnnpack" backend, compared with naive references
// (PyTorch semantics, NCHW at the delegate boundary) on random inputs with odd sizes.
#include <gtest/gtest.h>

#include <cmath>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

constexpr double kTol = 1e-4;

std::vector<size_t> nhwc(const std::vector<int64_t>& nchw) {
  return {size_t(nchw[0]), size_t(nchw[2]), size_t(nchw[3]), size_t(nchw[1])};
}
std::vector<size_t> as_dims(const std::vector<int64_t>& s) { return std::vector<size_t>(s.begin(), s.end()); }

// Builds the blob, runs it once on `inputs`, returns output 0 (whose Ember sizes must be `out_sizes`).
std::vector<float> run_one(const XnnBlobBuilder& b, std::vector<HostTensor*> inputs, const std::vector<int64_t>& out_sizes) {
  EXPECT_TRUE(b.ok()) << b.error();
  Runner r;
  Error err = r.init(b.build());
  EXPECT_EQ(err, Error::Ok) << r.message();
  if (err != Error::Ok) return {};
  HostTensor out(out_sizes);
  inputs.push_back(&out);
  err = r.run(inputs);
  EXPECT_EQ(err, Error::Ok) << r.message();
  EXPECT_TRUE(out.guards_intact());
  for (HostTensor* t : inputs) EXPECT_TRUE(t->guards_intact());
  return out.values();
}

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, o, kh, kw, sh, sw, pt, pr, pb, pl, dh, dw, groups;
  bool bias;
  float lo, hi;
  uint32_t winograd = 0;  // node flags: kWinogradFlag, with kWinograd2x2Flag for F(2x2) tiles
};

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesReference) {
  const ConvCase& k = GetParam();
  std::mt19937 rng(42);
  const std::vector<int64_t> xs = {k.n, k.c, k.h, k.w};
  const std::vector<int64_t> ws = {k.o, k.c / k.groups, k.kh, k.kw};
  std::vector<float> x = random_vector(numel(xs), rng);
  std::vector<float> w = random_vector(numel(ws), rng);
  std::vector<float> bias = random_vector(size_t(k.o), rng);
  Conv2dArgs a;
  a.stride[0] = k.sh, a.stride[1] = k.sw;
  a.pad[0] = k.pt, a.pad[1] = k.pr, a.pad[2] = k.pb, a.pad[3] = k.pl;
  a.dilation[0] = k.dh, a.dilation[1] = k.dw;
  a.groups = k.groups;
  a.lo = k.lo, a.hi = k.hi;
  std::vector<int64_t> ys;
  std::vector<float> expected = ref_conv2d(x, xs, w, ws, k.bias ? bias.data() : nullptr, a, &ys);

  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  XnnNodeParams p;
  p.padding = {{uint32_t(k.pt), uint32_t(k.pr), uint32_t(k.pb), uint32_t(k.pl)}};
  p.stride = {{uint32_t(k.sh), uint32_t(k.sw)}};
  p.dilation = {{uint32_t(k.dh), uint32_t(k.dw)}};
  p.output_min = k.lo, p.output_max = k.hi;
  p.flags = k.winograd;
  uint32_t y = b.conv2d_from_oihw(in, w.data(), size_t(k.o), size_t(k.c / k.groups), size_t(k.kh), size_t(k.kw),
                                  k.bias ? bias.data() : nullptr, p, uint32_t(k.groups));
  b.mark_output(y, fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, ys), expected), kTol);
}

constexpr float kInf = 1e30f;
INSTANTIATE_TEST_SUITE_P(
    Conv, ConvTest,
    ::testing::Values(ConvCase{"basic3x3", 1, 3, 7, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, -kInf, kInf},
                      ConvCase{"stride2_asym_pad", 2, 4, 11, 8, 6, 3, 2, 2, 2, 0, 1, 2, 1, 1, 1, 1, true, -kInf, kInf},
                      ConvCase{"dilation", 1, 3, 13, 10, 4, 3, 3, 1, 2, 2, 2, 2, 2, 2, 3, 1, false, -kInf, kInf},
                      ConvCase{"grouped", 1, 6, 9, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, true, -kInf, kInf},
                      ConvCase{"depthwise", 1, 5, 10, 9, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, true, -kInf, kInf},
                      ConvCase{"depthwise_mult2", 1, 3, 8, 7, 6, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 3, true, -kInf, kInf},
                      ConvCase{"pointwise_batch", 3, 7, 5, 3, 11, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, true, -kInf, kInf},
                      ConvCase{"relu6_fused", 1, 4, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, 0.0f, 6.0f},
                      ConvCase{"relu_fused_nobias", 1, 2, 6, 5, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, false, 0.0f, kInf},
                      ConvCase{"winograd", 1, 32, 13, 10, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, -kInf, kInf,
                               kWinogradFlag},
                      ConvCase{"winograd_relu6_batch_asym_pad", 2, 33, 9, 17, 35, 3, 3, 1, 1, 2, 0, 1, 1, 1, 1, 1, true,
                               0.0f, 6.0f, kWinogradFlag},
                      ConvCase{"winograd_2x2", 1, 40, 7, 9, 36, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, 0.0f, kInf,
                               kWinogradFlag | kWinograd2x2Flag},
                      ConvCase{"winograd_flag_on_stride2", 1, 32, 9, 9, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, true, -kInf,
                               kInf, kWinogradFlag}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return std::string(info.param.name); });

// The exporter's Winograd flags are used on pools of at most kWinogradMaxThreads threads and
// dropped on larger ones (the direct convolution then runs); both give the reference's result.
TEST(XnnpackOps, WinogradOnlyOnSmallThreadPools) {
  std::mt19937 rng(7);
  const std::vector<int64_t> xs = {1, 64, 56, 56}, ws = {64, 64, 3, 3};
  std::vector<float> x = random_vector(numel(xs), rng), w = random_vector(numel(ws), rng);
  std::vector<float> bias = random_vector(64, rng);
  Conv2dArgs a;
  a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
  std::vector<int64_t> ys;
  const std::vector<float> expected = ref_conv2d(x, xs, w, ws, bias.data(), a, &ys);
  for (uint8_t threads : {2, 8}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    XnnBlobBuilder b;
    uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
    XnnNodeParams p;
    p.padding = {{1, 1, 1, 1}};
    p.flags = kWinogradFlag;
    b.mark_output(b.conv2d_from_oihw(in, w.data(), 64, 64, 3, 3, bias.data(), p), fb::Layout::NchwToNhwc);
    Runner r;
    ASSERT_EQ(r.init(b.build(), {{"num_threads", {threads, 0, 0, 0}}}), Error::Ok) << r.message();
    EXPECT_EQ(r.stats().num_threads, size_t(threads));  // 231 MFLOP: worth 8 threads (thread_budget.cc)
    EXPECT_EQ(r.stats().winograd_convolutions, threads <= kWinogradMaxThreads ? 1u : 0u);
    HostTensor xt(xs), out(ys);
    xt.fill(x);
    ASSERT_EQ(r.run({&xt, &out}), Error::Ok) << r.message();
    const std::vector<float> got = out.values();
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += (double(got[i]) - expected[i]) * (double(got[i]) - expected[i]);
      den += double(expected[i]) * expected[i];
    }
    EXPECT_LT(std::sqrt(num / den), 1e-5);
  }
}

TEST(XnnpackOps, FullyConnected2dAnd3d) {
  std::mt19937 rng(1);
  for (const std::vector<int64_t>& xs : {std::vector<int64_t>{3, 17}, std::vector<int64_t>{2, 5, 17}}) {
    const int64_t rows = int64_t(numel(xs)) / 17;
    std::vector<float> x = random_vector(numel(xs), rng), w = random_vector(7 * 17, rng), bias = random_vector(7, rng);
    XnnBlobBuilder b;
    uint32_t in = b.input(as_dims(xs));
    XnnNodeParams p;
    p.output_min = -0.5f;
    uint32_t y = b.linear(in, w.data(), 7, 17, bias.data(), p);
    b.mark_output(y);
    HostTensor xt(xs);
    xt.fill(x);
    std::vector<int64_t> ys = xs;
    ys.back() = 7;
    EXPECT_LT(max_error(run_one(b, {&xt}, ys), ref_linear(x, rows, 17, w, 7, bias.data(), -0.5f)), kTol);
  }
}

struct PoolCase {
  const char* name;
  bool max;
  int64_t kh, kw, sh, sw, pt, pr, pb, pl, dh, dw;
};
class PoolTest : public ::testing::TestWithParam<PoolCase> {};

TEST_P(PoolTest, MatchesReference) {
  const PoolCase& k = GetParam();
  std::mt19937 rng(7);
  const std::vector<int64_t> xs = {2, 3, 11, 9};
  std::vector<float> x = random_vector(numel(xs), rng);
  Conv2dArgs a;
  a.stride[0] = k.sh, a.stride[1] = k.sw;
  a.pad[0] = k.pt, a.pad[1] = k.pr, a.pad[2] = k.pb, a.pad[3] = k.pl;
  a.dilation[0] = k.dh, a.dilation[1] = k.dw;
  std::vector<int64_t> ys;
  std::vector<float> expected = ref_pool2d(k.max, x, xs, k.kh, k.kw, a, &ys);
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  XnnNodeParams p;
  p.kernel = {{uint32_t(k.kh), uint32_t(k.kw)}};
  p.stride = {{uint32_t(k.sh), uint32_t(k.sw)}};
  p.padding = {{uint32_t(k.pt), uint32_t(k.pr), uint32_t(k.pb), uint32_t(k.pl)}};
  p.dilation = {{uint32_t(k.dh), uint32_t(k.dw)}};
  uint32_t y = b.node(k.max ? fb::OpType::MaxPooling2d : fb::OpType::AveragePooling2d, {in}, p);
  b.mark_output(y, fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, ys), expected), kTol);
}

INSTANTIATE_TEST_SUITE_P(Pool, PoolTest,
                         ::testing::Values(PoolCase{"max3x3s2p1", true, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
                                           PoolCase{"max2x2", true, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1},
                                           PoolCase{"max_dilated", true, 2, 3, 1, 1, 0, 0, 0, 0, 2, 2},
                                           PoolCase{"avg3x3s2", false, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1},
                                           PoolCase{"avg3x2_padded", false, 3, 2, 1, 2, 1, 1, 1, 0, 1, 1}),
                         [](const ::testing::TestParamInfo<PoolCase>& info) { return std::string(info.param.name); });

TEST(XnnpackOps, GlobalAveragePoolingToNchw) {
  std::mt19937 rng(3);
  const std::vector<int64_t> xs = {2, 5, 7, 3};
  std::vector<float> x = random_vector(numel(xs), rng);
  std::vector<float> expected(10, 0.0f);
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 5; ++c) {
      double s = 0;
      for (int i = 0; i < 21; ++i) s += x[(n * 5 + c) * 21 + i];
      expected[n * 5 + c] = float(s / 21);
    }
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  uint32_t y = b.node(fb::OpType::GlobalAveragePooling2d, {in});
  b.mark_output(y, fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, {2, 5, 1, 1}), expected), kTol);
}

struct BinaryCase {
  const char* name;
  fb::OpType op;
  char ref;
  std::vector<int64_t> a, b;
  bool b_constant;
};
class BinaryTest : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryTest, BroadcastsLikeNumpy) {
  const BinaryCase& k = GetParam();
  std::mt19937 rng(11);
  std::vector<float> a = random_vector(numel(k.a), rng), bv = random_vector(numel(k.b), rng, 0.5f, 2.0f);
  std::vector<int64_t> ys;
  std::vector<float> expected = ref_binary(k.ref, a, k.a, bv, k.b, &ys);
  XnnBlobBuilder b;
  uint32_t ia = b.input(as_dims(k.a));
  uint32_t ib = k.b_constant ? b.constant(as_dims(k.b), bv.data()) : b.input(as_dims(k.b));
  XnnNodeParams p;
  uint32_t y = b.node(k.op, {ia, ib}, p);
  b.mark_output(y);
  HostTensor at(k.a), bt(k.b);
  at.fill(a);
  bt.fill(bv);
  std::vector<HostTensor*> ins = {&at};
  if (!k.b_constant) ins.push_back(&bt);
  EXPECT_LT(max_error(run_one(b, ins, ys), expected), kTol);
}

INSTANTIATE_TEST_SUITE_P(
    Binary, BinaryTest,
    ::testing::Values(BinaryCase{"add", fb::OpType::Add2, '+', {2, 3, 4, 5}, {3, 1, 5}, false},
                      BinaryCase{"add_const_channel", fb::OpType::Add2, '+', {1, 7, 5, 3}, {3}, true},
                      BinaryCase{"sub", fb::OpType::Subtract, '-', {4, 1}, {1, 6}, false},
                      BinaryCase{"mul", fb::OpType::Multiply2, '*', {3, 1, 7}, {5, 1}, false},
                      BinaryCase{"mul_const", fb::OpType::Multiply2, '*', {2, 9}, {2, 9}, true},
                      BinaryCase{"div", fb::OpType::Divide, '/', {5, 3}, {3}, false},
                      BinaryCase{"max", fb::OpType::Maximum2, 'M', {2, 3, 5}, {2, 1, 5}, false},
                      BinaryCase{"min", fb::OpType::Minimum2, 'm', {7}, {1}, false},
                      BinaryCase{"sqdiff", fb::OpType::SquaredDifference, 'q', {3, 4}, {3, 4}, false}),
    [](const ::testing::TestParamInfo<BinaryCase>& info) { return std::string(info.param.name); });

// NCHW elementwise with a per-channel constant: PyTorch [1, C, 1, 1] becomes NHWC [1, 1, 1, C].
TEST(XnnpackOps, NchwAddPerChannelConstant) {
  std::mt19937 rng(5);
  const std::vector<int64_t> xs = {2, 3, 5, 7};
  std::vector<float> x = random_vector(numel(xs), rng), c = random_vector(3, rng);
  std::vector<int64_t> ys;
  std::vector<float> expected = ref_binary('+', x, xs, c, {1, 3, 1, 1}, &ys);
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  uint32_t y = b.node(fb::OpType::Add2, {in, b.constant({1, 1, 1, 3}, c.data())});
  b.mark_output(y, fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, ys), expected), kTol);
}

struct UnaryCase {
  const char* name;
  fb::OpType op;
  float (*ref)(float);
  float lo, hi;  // input range
};
class UnaryTest : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryTest, MatchesReference) {
  const UnaryCase& k = GetParam();
  std::mt19937 rng(13);
  const std::vector<int64_t> xs = {3, 5, 7};
  std::vector<float> x = random_vector(numel(xs), rng, k.lo, k.hi);
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = k.ref(x[i]);
  XnnBlobBuilder b;
  uint32_t in = b.input(as_dims(xs));
  XnnNodeParams p;
  p.output_min = -0.25f, p.output_max = 0.75f;  // clamp
  p.alpha = 0.1f;                               // leaky relu slope (elu uses 1.0 below)
  if (k.op == fb::OpType::Elu) p.alpha = 1.0f;
  b.mark_output(b.node(k.op, {in}, p));
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, xs), expected), 2e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Unary, UnaryTest,
    ::testing::Values(
        UnaryCase{"clamp", fb::OpType::Clamp, [](float v) { return std::min(std::max(v, -0.25f), 0.75f); }, -2, 2},
        UnaryCase{"sigmoid", fb::OpType::Sigmoid, [](float v) { return 1.0f / (1.0f + std::exp(-v)); }, -6, 6},
        UnaryCase{"hardswish", fb::OpType::HardSwish,
                  [](float v) { return v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f; }, -5, 5},
        UnaryCase{"leaky_relu", fb::OpType::LeakyRelu, [](float v) { return v > 0 ? v : 0.1f * v; }, -3, 3},
        UnaryCase{"elu", fb::OpType::Elu, [](float v) { return v > 0 ? v : std::expm1(v); }, -3, 3},
        UnaryCase{"abs", fb::OpType::Abs, [](float v) { return std::fabs(v); }, -3, 3},
        UnaryCase{"negate", fb::OpType::Negate, [](float v) { return -v; }, -3, 3},
        UnaryCase{"square", fb::OpType::Square, [](float v) { return v * v; }, -3, 3},
        UnaryCase{"sqrt", fb::OpType::SquareRoot, [](float v) { return std::sqrt(v); }, 0, 9},
        UnaryCase{"ceil", fb::OpType::Ceiling, [](float v) { return std::ceil(v); }, -3, 3},
        UnaryCase{"floor", fb::OpType::Floor, [](float v) { return std::floor(v); }, -3, 3},
        UnaryCase{"sine", fb::OpType::Sine, [](float v) { return std::sin(v); }, -20, 20},
        UnaryCase{"cosine", fb::OpType::Cosine, [](float v) { return std::cos(v); }, -20, 20},
        UnaryCase{"copy", fb::OpType::Copy, [](float v) { return v; }, -3, 3}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) { return std::string(info.param.name); });

TEST(XnnpackOps, SoftmaxLastDim) {
  std::mt19937 rng(17);
  for (const std::vector<int64_t>& xs : {std::vector<int64_t>{3, 7}, std::vector<int64_t>{2, 3, 11}}) {
    std::vector<float> x = random_vector(numel(xs), rng, -4, 4);
    XnnBlobBuilder b;
    b.mark_output(b.node(fb::OpType::Softmax, {b.input(as_dims(xs))}));
    HostTensor xt(xs);
    xt.fill(x);
    const int64_t cols = xs.back();
    EXPECT_LT(max_error(run_one(b, {&xt}, xs), ref_softmax_lastdim(x, int64_t(x.size()) / cols, cols)), kTol);
  }
}

TEST(XnnpackOps, PreluPerChannel) {
  std::mt19937 rng(19);
  const std::vector<int64_t> xs = {1, 4, 5, 3};
  std::vector<float> x = random_vector(numel(xs), rng), slope = random_vector(4, rng, 0, 0.5f);
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = (i / 15) % 4;
    expected[i] = x[i] > 0 ? x[i] : slope[c] * x[i];
  }
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  b.mark_output(b.node(fb::OpType::Prelu, {in, b.constant({4}, slope.data())}), fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, xs), expected), kTol);
}

// constant_pad_nd on an NCHW tensor's H and W: pad = (left 0, right 3, top 1, bottom 2).
TEST(XnnpackOps, ConstantPadSpatial) {
  std::mt19937 rng(23);
  const std::vector<int64_t> xs = {1, 2, 3, 4};
  std::vector<float> x = random_vector(numel(xs), rng);
  const std::vector<int64_t> ys = {1, 2, 6, 7};
  std::vector<float> expected(numel(ys), 0.5f);
  for (int c = 0; c < 2; ++c)
    for (int h = 0; h < 3; ++h)
      for (int w = 0; w < 4; ++w) expected[(c * 6 + h + 1) * 7 + w] = x[(c * 3 + h) * 4 + w];
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  XnnNodeParams p;
  p.pre_paddings = {0, 1, 0, 0};   // NHWC
  p.post_paddings = {0, 2, 3, 0};
  p.padding_value = 0.5f;
  b.mark_output(b.node(fb::OpType::StaticConstantPad, {in}, p), fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, ys), expected), kTol);
}

TEST(XnnpackOps, ReshapeWithInferredDim) {
  std::mt19937 rng(29);
  std::vector<float> x = random_vector(2 * 3 * 5, rng);
  XnnBlobBuilder b;
  uint32_t in = b.input({2, 3, 5});
  XnnNodeParams p;
  p.new_shape = {-1, 5};
  uint32_t r = b.node(fb::OpType::StaticReshape, {in}, p);
  // Reshape followed by a real op so the reshape output is internal.
  XnnNodeParams c;
  b.mark_output(b.node(fb::OpType::Negate, {r}, c));
  HostTensor xt({2, 3, 5});
  xt.fill(x);
  std::vector<float> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = -x[i];
  EXPECT_LT(max_error(run_one(b, {&xt}, {6, 5}), expected), kTol);
}

class ResizeTest : public ::testing::TestWithParam<bool> {};
TEST_P(ResizeTest, BilinearLikeUpsample) {
  const bool align = GetParam();
  std::mt19937 rng(31);
  const std::vector<int64_t> xs = {1, 2, 5, 7};
  std::vector<float> x = random_vector(numel(xs), rng);
  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  XnnNodeParams p;
  p.new_height = 9, p.new_width = 11;
  p.flags = align ? 0x8 /* XNN_FLAG_ALIGN_CORNERS */ : 0;
  b.mark_output(b.node(fb::OpType::StaticResizeBilinear2d, {in}, p), fb::Layout::NchwToNhwc);
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, {1, 2, 9, 11}), ref_resize_bilinear(x, xs, 9, 11, align)), kTol);
}
INSTANTIATE_TEST_SUITE_P(Resize, ResizeTest, ::testing::Bool());

// A small classifier: conv(relu) -> maxpool -> global avgpool -> flatten -> linear -> softmax.
TEST(XnnpackOps, ChainedClassifier) {
  std::mt19937 rng(37);
  const std::vector<int64_t> xs = {2, 3, 13, 11};
  std::vector<float> x = random_vector(numel(xs), rng), w = random_vector(8 * 3 * 9, rng),
                     bias = random_vector(8, rng), fw = random_vector(5 * 8, rng), fb_ = random_vector(5, rng);
  Conv2dArgs ca;
  ca.pad[0] = ca.pad[1] = ca.pad[2] = ca.pad[3] = 1;
  ca.lo = 0;
  std::vector<int64_t> s1, s2;
  std::vector<float> h = ref_conv2d(x, xs, w, {8, 3, 3, 3}, bias.data(), ca, &s1);
  Conv2dArgs pa;
  pa.stride[0] = pa.stride[1] = 2;
  h = ref_pool2d(true, h, s1, 2, 2, pa, &s2);
  std::vector<float> g(2 * 8, 0.0f);
  const int64_t hw = s2[2] * s2[3];
  for (int i = 0; i < 16; ++i) {
    double s = 0;
    for (int64_t j = 0; j < hw; ++j) s += h[i * hw + j];
    g[i] = float(s / hw);
  }
  std::vector<float> logits = ref_linear(g, 2, 8, fw, 5, fb_.data());
  std::vector<float> expected = ref_softmax_lastdim(logits, 2, 5);

  XnnBlobBuilder b;
  uint32_t in = b.input(nhwc(xs), fb::Layout::NchwToNhwc);
  XnnNodeParams cp;
  cp.padding = {{1, 1, 1, 1}};
  cp.output_min = 0;
  uint32_t t = b.conv2d_from_oihw(in, w.data(), 8, 3, 3, 3, bias.data(), cp);
  XnnNodeParams pp;
  pp.kernel = {{2, 2}};
  pp.stride = {{2, 2}};
  t = b.node(fb::OpType::MaxPooling2d, {t}, pp);
  t = b.node(fb::OpType::GlobalAveragePooling2d, {t});
  XnnNodeParams rp;
  rp.new_shape = {2, 8};
  t = b.node(fb::OpType::StaticReshape, {t}, rp);
  t = b.linear(t, fw.data(), 5, 8, fb_.data());
  b.mark_output(b.node(fb::OpType::Softmax, {t}));
  HostTensor xt(xs);
  xt.fill(x);
  EXPECT_LT(max_error(run_one(b, {&xt}, {2, 5}), expected), kTol);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
