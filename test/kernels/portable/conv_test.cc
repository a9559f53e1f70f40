// Convolution kernels against a direct 7-nested-loop reference (regular and transposed).
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

struct Conv {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t oph = 0, opw = 0;  // transposed only
};

int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// out[n][o][y][x] = bias[o] + sum_{i, ky, kx} in[n][g*icg + i][y*s - p + ky*d][x*s - p + kx*d] * w[o][i][ky][kx]
std::vector<float> ref_conv(const Conv& c, const std::vector<float>& in, const std::vector<float>& w,
                            const std::vector<float>* bias) {
  const int64_t oh = out_size(c.h, c.kh, c.sh, c.ph, c.dh), ow = out_size(c.w, c.kw, c.sw, c.pw, c.dw);
  const int64_t icg = c.c / c.groups, ocg = c.oc / c.groups;
  std::vector<float> out(static_cast<size_t>(c.n * c.oc * oh * ow));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.oc; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double s = bias ? (*bias)[o] : 0.0;
          const int64_t g = o / ocg;
          for (int64_t i = 0; i < icg; ++i)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t iy = y * c.sh - c.ph + ky * c.dh, ix = x * c.sw - c.pw + kx * c.dw;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w) continue;
                s += double(in[((n * c.c + g * icg + i) * c.h + iy) * c.w + ix]) *
                     w[((o * icg + i) * c.kh + ky) * c.kw + kx];
              }
          out[((n * c.oc + o) * oh + y) * ow + x] = static_cast<float>(s);
        }
  return out;
}

// Transposed: weight [C, OC/groups, KH, KW]; every input pixel scatters into the output.
std::vector<float> ref_conv_transposed(const Conv& c, const std::vector<float>& in,
                                       const std::vector<float>& w, const std::vector<float>* bias,
                                       int64_t* oh_out, int64_t* ow_out) {
  const int64_t oh = (c.h - 1) * c.sh - 2 * c.ph + c.dh * (c.kh - 1) + c.oph + 1;
  const int64_t ow = (c.w - 1) * c.sw - 2 * c.pw + c.dw * (c.kw - 1) + c.opw + 1;
  *oh_out = oh;
  *ow_out = ow;
  const int64_t icg = c.c / c.groups, ocg = c.oc / c.groups;
  std::vector<double> acc(static_cast<size_t>(c.n * c.oc * oh * ow), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t i = 0; i < c.c; ++i)
      for (int64_t y = 0; y < c.h; ++y)
        for (int64_t x = 0; x < c.w; ++x)
          for (int64_t o = 0; o < ocg; ++o)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) {
                const int64_t oy = y * c.sh - c.ph + ky * c.dh, ox = x * c.sw - c.pw + kx * c.dw;
                if (oy < 0 || oy >= oh || ox < 0 || ox >= ow) continue;
                const int64_t og = (i / icg) * ocg + o;
                acc[((n * c.oc + og) * oh + oy) * ow + ox] +=
                    double(in[((n * c.c + i) * c.h + y) * c.w + x]) * w[((i * ocg + o) * c.kh + ky) * c.kw + kx];
              }
  std::vector<float> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t o = static_cast<int64_t>(i) / (oh * ow) % c.oc;
    out[i] = static_cast<float>(acc[i] + (bias ? (*bias)[o] : 0.0));
  }
  return out;
}

class ConvTest : public ::testing::TestWithParam<int> {};  // 0 serial, 1 pool, 2 no temp

const Conv kCases[] = {
    // n  c  h   w  oc kh kw sh sw ph pw dh dw g
    {1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {1, 3, 7, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {2, 3, 17, 13, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1},
    {1, 4, 9, 11, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1},      // 1x1 direct matrix
    {1, 8, 9, 11, 17, 1, 1, 2, 2, 0, 0, 1, 1, 1},     // 1x1 strided
    {1, 6, 17, 17, 9, 3, 5, 1, 2, 2, 1, 2, 1, 3},     // groups, dilation, rect
    {2, 8, 15, 15, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8},     // depthwise
    {1, 8, 15, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 8},    // depthwise x2 multiplier, stride 2
    {1, 5, 12, 12, 5, 5, 5, 1, 1, 2, 2, 2, 2, 5},     // depthwise dilated
    {1, 3, 33, 33, 16, 7, 7, 2, 2, 3, 3, 1, 1, 1},    // resnet stem-like
    {1, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // deeper K (> 256)
    {1, 300, 5, 5, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1},     // K blocks with 1x1
    {3, 2, 1, 29, 5, 1, 4, 1, 3, 0, 2, 1, 1, 1},      // height-1 (1-D like)
};

TEST_P(ConvTest, Conv2dMatchesDirectLoops) {
  std::mt19937 rng(11);
  ReverseOrderPool pool(3);
  for (const Conv& c : kCases) {
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      KernelRunner r;
      if (GetParam() == 1) r.set_pool(&pool);
      if (GetParam() == 2) r.set_use_temp(false);
      const int64_t oh = out_size(c.h, c.kh, c.sh, c.ph, c.dh), ow = out_size(c.w, c.kw, c.sw, c.pw, c.dw);
      TestTensor x(F, {c.n, c.c, c.h, c.w}), w(F, {c.oc, c.c / c.groups, c.kh, c.kw}), b(F, {c.oc});
      TestTensor out(F, {c.n, c.oc, oh, ow}), out2(F, {c.n, c.oc, oh, ow});
      x.fill_random(rng);
      w.fill_random(rng);
      b.fill_random(rng);
      std::vector<float> bias = b.values();
      std::vector<float> want = ref_conv(c, x.values(), w.values(), with_bias ? &bias : nullptr);
      EValue* bias_arg = with_bias ? r.tensor(b) : r.none();
      Error e = r.run("aten::convolution.default",
                      {r.tensor(x), r.tensor(w), bias_arg, r.ints({c.sh, c.sw}), r.ints({c.ph, c.pw}),
                       r.ints({c.dh, c.dw}), r.b(false), r.ints({0, 0}), r.i(c.groups), r.tensor(out)});
      ASSERT_EQ(e, Error::Ok) << r.message();
      expect_close(out.values(), want, 1e-4f, "convolution");
      EXPECT_TRUE(out.guard_ok());
      e = r.run("aten::conv2d.default", {r.tensor(x), r.tensor(w), bias_arg, r.ints({c.sh, c.sw}),
                                         r.ints({c.ph, c.pw}), r.ints({c.dh, c.dw}), r.i(c.groups),
                                         r.tensor(out2)});
      ASSERT_EQ(e, Error::Ok) << r.message();
      expect_close(out2.values(), want, 1e-4f, "conv2d");
    }
  }
}

TEST_P(ConvTest, TransposedMatchesScatterLoops) {
  std::mt19937 rng(12);
  ReverseOrderPool pool(2);
  const Conv cases[] = {
      {1, 2, 3, 3, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1},
      {2, 4, 5, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 1, 1},
      {1, 3, 7, 4, 2, 4, 2, 3, 1, 1, 0, 2, 1, 1, 2, 0},
      {1, 6, 6, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 6, 1, 1},
  };
  for (const Conv& c : cases) {
    KernelRunner r;
    if (GetParam() == 1) r.set_pool(&pool);
    TestTensor x(F, {c.n, c.c, c.h, c.w}), w(F, {c.c, c.oc / c.groups, c.kh, c.kw}), b(F, {c.oc});
    x.fill_random(rng);
    w.fill_random(rng);
    b.fill_random(rng);
    std::vector<float> bias = b.values();
    int64_t oh, ow;
    std::vector<float> want = ref_conv_transposed(c, x.values(), w.values(), &bias, &oh, &ow);
    TestTensor out(F, {c.n, c.oc, oh, ow}), out2(F, {c.n, c.oc, oh, ow});
    Error e = r.run("aten::convolution.default",
                    {r.tensor(x), r.tensor(w), r.tensor(b), r.ints({c.sh, c.sw}), r.ints({c.ph, c.pw}),
                     r.ints({c.dh, c.dw}), r.b(true), r.ints({c.oph, c.opw}), r.i(c.groups), r.tensor(out)});
    ASSERT_EQ(e, Error::Ok) << r.message();
    expect_close(out.values(), want, 1e-4f, "conv transposed");
    e = r.run("aten::conv_transpose2d.input",
              {r.tensor(x), r.tensor(w), r.tensor(b), r.ints({c.sh, c.sw}), r.ints({c.ph, c.pw}),
               r.ints({c.oph, c.opw}), r.i(c.groups), r.ints({c.dh, c.dw}), r.tensor(out2)});
    ASSERT_EQ(e, Error::Ok) << r.message();
    expect_close(out2.values(), want, 1e-4f, "conv_transpose2d");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, ConvTest, ::testing::Values(0, 1, 2));

TEST(Conv1d, MatchesHeightOneConv2d) {
  std::mt19937 rng(13);
  KernelRunner r;
  const Conv c{2, 4, 1, 23, 6, 1, 3, 1, 2, 0, 1, 1, 2, 2};
  TestTensor x(F, {c.n, c.c, c.w}), w(F, {c.oc, c.c / c.groups, c.kw}), b(F, {c.oc});
  x.fill_random(rng);
  w.fill_random(rng);
  b.fill_random(rng);
  std::vector<float> bias = b.values();
  std::vector<float> want = ref_conv(c, x.values(), w.values(), &bias);
  const int64_t ow = out_size(c.w, c.kw, c.sw, c.pw, c.dw);
  TestTensor out(F, {c.n, c.oc, ow}), out2(F, {c.n, c.oc, ow});
  ASSERT_EQ(r.run("aten::conv1d.default", {r.tensor(x), r.tensor(w), r.tensor(b), r.ints({c.sw}),
                                           r.ints({c.pw}), r.ints({c.dw}), r.i(c.groups), r.tensor(out)}),
            Error::Ok)
      << r.message();
  expect_close(out.values(), want, 1e-4f, "conv1d");
  ASSERT_EQ(r.run("aten::convolution.default",
                  {r.tensor(x), r.tensor(w), r.tensor(b), r.ints({c.sw}), r.ints({c.pw}), r.ints({c.dw}),
                   r.b(false), r.ints({0}), r.i(c.groups), r.tensor(out2)}),
            Error::Ok)
      << r.message();
  expect_close(out2.values(), want, 1e-4f, "convolution 1-D");
}

TEST(Conv2d, UnbatchedAndStringPadding) {
  std::mt19937 rng(14);
  KernelRunner r;
  // 'same' with an even kernel: asymmetric padding (1 before, 2 after for k=4, d=1).
  TestTensor x(F, {3, 9, 10}), w(F, {5, 3, 4, 3}), out(F, {5, 9, 10});
  x.fill_random(rng);
  w.fill_random(rng);
  ASSERT_EQ(r.run("aten::conv2d.padding", {r.tensor(x), r.tensor(w), r.none(), r.ints({1, 1}),
                                           r.str("same"), r.ints({1, 1}), r.i(1), r.tensor(out)}),
            Error::Ok)
      << r.message();
  // Reference: pad 1 before (the extra padding goes after), then crop to 9x10.
  const Conv c{1, 3, 9, 10, 5, 4, 3, 1, 1, 1, 1, 1, 1, 1};
  std::vector<float> full = ref_conv(c, x.values(), w.values(), nullptr);
  const int64_t oh = out_size(9, 4, 1, 1, 1), ow = out_size(10, 3, 1, 1, 1);  // 8 x 10
  std::vector<float> got = out.values();
  for (int64_t o = 0; o < 5; ++o)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx)
        EXPECT_NEAR(got[(o * 9 + y) * 10 + xx], full[(o * oh + y) * ow + xx], 1e-4f);

  TestTensor out_valid(F, {5, 6, 8});
  ASSERT_EQ(r.run("aten::conv2d.padding", {r.tensor(x), r.tensor(w), r.none(), r.ints({1, 1}),
                                           r.str("valid"), r.ints({1, 1}), r.i(1), r.tensor(out_valid)}),
            Error::Ok);
  const Conv cv{1, 3, 9, 10, 5, 4, 3, 1, 1, 0, 0, 1, 1, 1};
  expect_close(out_valid.values(), ref_conv(cv, x.values(), w.values(), nullptr), 1e-4f, "valid");
}

TEST(ConvErrors, BadArguments) {
  KernelRunner r;
  TestTensor x(F, {1, 4, 5, 5}), w(F, {6, 4, 3, 3}), out(F, {1, 6, 3, 3}), small(F, {1, 6, 2, 2});
  TestTensor wg(F, {6, 3, 3, 3});
  auto call = [&](TestTensor& weight, TestTensor& o, int64_t groups, size_t drop = 0) {
    std::vector<EValue*> args = {r.tensor(x), r.tensor(weight), r.none(), r.ints({1, 1}), r.ints({0, 0}),
                                 r.ints({1, 1}), r.b(false), r.ints({0, 0}), r.i(groups), r.tensor(o)};
    args.resize(args.size() - drop);
    return r.run("aten::convolution.default", args);
  };
  EXPECT_EQ(call(w, out, 1), Error::Ok) << r.message();
  EXPECT_EQ(call(w, out, 1, 1), Error::InvalidArgument);      // missing output
  EXPECT_EQ(call(w, small, 1), Error::OutOfBounds);            // output too small
  EXPECT_EQ(call(wg, out, 1), Error::InvalidArgument);         // weight channels mismatch
  EXPECT_EQ(call(w, out, 3), Error::InvalidArgument);          // 4 channels, 3 groups
  EXPECT_EQ(r.run("aten::convolution.default",
                  {r.tensor(x), r.tensor(w), r.none(), r.ints({0, 1}), r.ints({0, 0}), r.ints({1, 1}),
                   r.b(false), r.ints({0, 0}), r.i(1), r.tensor(out)}),
            Error::InvalidArgument);  // zero stride
}

}  // namespace
}  // namespace testing
}  // namespace ember
