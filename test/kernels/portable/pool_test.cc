// Pooling kernels against naive window loops written from PyTorch's documented semantics.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

struct Pool {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  bool ceil;
};

int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const double v = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t o = static_cast<int64_t>(ceil ? std::ceil(v) : std::floor(v)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

void ref_max(const Pool& p, const std::vector<float>& x, std::vector<float>* out, std::vector<int64_t>* idx,
             int64_t* oh_out, int64_t* ow_out) {
  const int64_t oh = pool_out(p.h, p.kh, p.sh, p.ph, p.dh, p.ceil), ow = pool_out(p.w, p.kw, p.sw, p.pw, p.dw, p.ceil);
  *oh_out = oh;
  *ow_out = ow;
  for (int64_t pl = 0; pl < p.n * p.c; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        float best = -std::numeric_limits<float>::infinity();
        int64_t bi = -1;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            int64_t iy = y * p.sh - p.ph + ky * p.dh, ix = xx * p.sw - p.pw + kx * p.dw;
            if (iy < 0 || ix < 0 || iy >= p.h || ix >= p.w) continue;
            float v = x[(pl * p.h + iy) * p.w + ix];
            if (bi < 0 || v > best) {
              best = v;
              bi = iy * p.w + ix;
            }
          }
        out->push_back(best);
        idx->push_back(bi);
      }
}

std::vector<float> ref_avg(const Pool& p, const std::vector<float>& x, bool include_pad, int64_t divisor,
                           int64_t* oh_out, int64_t* ow_out) {
  const int64_t oh = pool_out(p.h, p.kh, p.sh, p.ph, 1, p.ceil), ow = pool_out(p.w, p.kw, p.sw, p.pw, 1, p.ceil);
  *oh_out = oh;
  *ow_out = ow;
  std::vector<float> out;
  for (int64_t pl = 0; pl < p.n * p.c; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xx = 0; xx < ow; ++xx) {
        double s = 0;
        int64_t valid = 0, padded = 0;
        for (int64_t ky = 0; ky < p.kh; ++ky)
          for (int64_t kx = 0; kx < p.kw; ++kx) {
            int64_t iy = y * p.sh - p.ph + ky, ix = xx * p.sw - p.pw + kx;
            // Cells beyond input + padding (ceil_mode overhang) count for neither divisor.
            if (iy >= p.h + p.ph || ix >= p.w + p.pw) continue;
            ++padded;
            if (iy < 0 || ix < 0 || iy >= p.h || ix >= p.w) continue;
            ++valid;
            s += x[(pl * p.h + iy) * p.w + ix];
          }
        const int64_t d = divisor ? divisor : include_pad ? padded : valid;
        out.push_back(valid ? static_cast<float>(s / d) : 0.0f);
      }
  return out;
}

const Pool kCases[] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, false},
    {1, 3, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, false},
    {2, 3, 17, 13, 3, 3, 2, 2, 1, 1, 1, 1, true},
    {1, 5, 33, 17, 2, 3, 2, 1, 0, 1, 1, 1, true},
    {1, 2, 12, 12, 3, 3, 3, 3, 1, 0, 2, 2, false},
    {1, 4, 8, 9, 2, 2, 2, 2, 0, 0, 1, 1, true},
    {2, 16, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, false},  // resnet stem pool
};

class PoolTest : public ::testing::TestWithParam<int> {};

TEST_P(PoolTest, MaxPoolWithAndWithoutIndices) {
  std::mt19937 rng(21);
  ReverseOrderPool pool(3);
  for (const Pool& p : kCases) {
    KernelRunner r;
    if (GetParam()) r.set_pool(&pool);
    TestTensor x(F, {p.n, p.c, p.h, p.w});
    x.fill_random(rng);
    std::vector<float> want;
    std::vector<int64_t> want_idx;
    int64_t oh, ow;
    ref_max(p, x.values(), &want, &want_idx, &oh, &ow);
    TestTensor out(F, {p.n, p.c, oh, ow}), out2(F, {p.n, p.c, oh, ow}), idx(ScalarType::Int64, {p.n, p.c, oh, ow});
    auto common = [&]() {
      return std::vector<EValue*>{r.tensor(x), r.ints({p.kh, p.kw}), r.ints({p.sh, p.sw}), r.ints({p.ph, p.pw}),
                                  r.ints({p.dh, p.dw}), r.b(p.ceil)};
    };
    std::vector<EValue*> args = common();
    args.push_back(r.tensor(out));
    ASSERT_EQ(r.run("aten::max_pool2d.default", args), Error::Ok) << r.message();
    expect_close(out.values(), want, 0.0f, "max_pool2d");
    args = common();
    args.push_back(r.tensor(out2));
    args.push_back(r.tensor(idx));
    ASSERT_EQ(r.run("aten::max_pool2d_with_indices.default", args), Error::Ok) << r.message();
    expect_close(out2.values(), want, 0.0f, "max_pool2d_with_indices");
    EXPECT_EQ(std::vector<int64_t>(idx.data<int64_t>(), idx.data<int64_t>() + idx.numel()), want_idx);
    EXPECT_TRUE(idx.guard_ok());
  }
}

TEST_P(PoolTest, AvgPoolVariants) {
  std::mt19937 rng(22);
  ReverseOrderPool pool(2);
  for (const Pool& p : kCases) {
    if (p.dh != 1) continue;
    for (int variant = 0; variant < 3; ++variant) {  // include pad, exclude pad, divisor 5
      KernelRunner r;
      if (GetParam()) r.set_pool(&pool);
      TestTensor x(F, {p.n, p.c, p.h, p.w});
      x.fill_random(rng);
      int64_t oh, ow;
      const bool include_pad = variant != 1;
      const int64_t divisor = variant == 2 ? 5 : 0;
      std::vector<float> want = ref_avg(p, x.values(), include_pad, divisor, &oh, &ow);
      TestTensor out(F, {p.n, p.c, oh, ow});
      ASSERT_EQ(r.run("aten::avg_pool2d.default",
                      {r.tensor(x), r.ints({p.kh, p.kw}), r.ints({p.sh, p.sw}), r.ints({p.ph, p.pw}),
                       r.b(p.ceil), r.b(include_pad), divisor ? r.i(divisor) : r.none(), r.tensor(out)}),
                Error::Ok)
          << r.message();
      expect_close(out.values(), want, 1e-5f, "avg_pool2d");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PoolTest, ::testing::Values(0, 1));

TEST(Pool, DefaultStrideIsKernelAndNanPropagates) {
  KernelRunner r;
  TestTensor x(F, {1, 1, 4, 4}), out(F, {1, 1, 2, 2}), idx(ScalarType::Int64, {1, 1, 2, 2});
  for (int i = 0; i < 16; ++i) x.f()[i] = static_cast<float>(i);
  x.f()[5] = NAN;
  ASSERT_EQ(r.run("aten::max_pool2d_with_indices.default",
                  {r.tensor(x), r.ints({2, 2}), r.ints({}), r.ints({0}), r.ints({1}), r.b(false),
                   r.tensor(out), r.tensor(idx)}),
            Error::Ok)
      << r.message();
  EXPECT_TRUE(std::isnan(out.f()[0]));
  EXPECT_EQ(idx.data<int64_t>()[0], 5);
  EXPECT_EQ(out.f()[1], 7.0f);
  EXPECT_EQ(out.f()[3], 15.0f);
  EXPECT_EQ(idx.data<int64_t>()[3], 15);
}

TEST(Pool, AdaptivePools) {
  std::mt19937 rng(23);
  KernelRunner r;
  const int64_t cases[][4] = {{7, 7, 1, 1}, {7, 9, 3, 4}, {5, 5, 7, 7}, {13, 17, 5, 3}};
  for (const auto& c : cases) {
    const int64_t h = c[0], w = c[1], oh = c[2], ow = c[3];
    TestTensor x(F, {2, 3, h, w}), out(F, {2, 3, oh, ow}), mout(F, {2, 3, oh, ow}), idx(ScalarType::Int64, {2, 3, oh, ow});
    x.fill_random(rng);
    std::vector<float> want, want_max;
    std::vector<int64_t> want_idx;
    for (int64_t pl = 0; pl < 6; ++pl)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t xx = 0; xx < ow; ++xx) {
          int64_t y0 = static_cast<int64_t>(std::floor(double(y * h) / oh));
          int64_t y1 = static_cast<int64_t>(std::ceil(double((y + 1) * h) / oh));
          int64_t x0 = static_cast<int64_t>(std::floor(double(xx * w) / ow));
          int64_t x1 = static_cast<int64_t>(std::ceil(double((xx + 1) * w) / ow));
          double s = 0;
          float best = -INFINITY;
          int64_t bi = 0;
          for (int64_t iy = y0; iy < y1; ++iy)
            for (int64_t ix = x0; ix < x1; ++ix) {
              float v = x.f()[(pl * h + iy) * w + ix];
              s += v;
              if (v > best) {
                best = v;
                bi = iy * w + ix;
              }
            }
          want.push_back(static_cast<float>(s / double((y1 - y0) * (x1 - x0))));
          want_max.push_back(best);
          want_idx.push_back(bi);
        }
    ASSERT_EQ(r.run("aten::adaptive_avg_pool2d.default", {r.tensor(x), r.ints({oh, ow}), r.tensor(out)}), Error::Ok)
        << r.message();
    expect_close(out.values(), want, 1e-5f, "adaptive_avg_pool2d");
    ASSERT_EQ(r.run("aten::_adaptive_avg_pool2d.default", {r.tensor(x), r.ints({oh, ow}), r.tensor(out)}), Error::Ok);
    expect_close(out.values(), want, 1e-5f, "_adaptive_avg_pool2d");
    ASSERT_EQ(r.run("aten::adaptive_max_pool2d.default", {r.tensor(x), r.ints({oh, ow}), r.tensor(mout), r.tensor(idx)}),
              Error::Ok);
    expect_close(mout.values(), want_max, 0.0f, "adaptive_max_pool2d");
    EXPECT_EQ(std::vector<int64_t>(idx.data<int64_t>(), idx.data<int64_t>() + idx.numel()), want_idx);
  }
}

TEST(Pool, OneDimensional) {
  std::mt19937 rng(24);
  KernelRunner r;
  TestTensor x(F, {2, 3, 17});
  x.fill_random(rng);
  const Pool p{1, 6, 1, 17, 1, 3, 1, 2, 0, 1, 1, 1, true};
  std::vector<float> want;
  std::vector<int64_t> want_idx;
  int64_t oh, ow;
  ref_max(p, x.values(), &want, &want_idx, &oh, &ow);
  TestTensor out(F, {2, 3, ow});
  ASSERT_EQ(r.run("aten::max_pool1d.default", {r.tensor(x), r.ints({3}), r.ints({2}), r.ints({1}), r.ints({1}),
                                               r.b(true), r.tensor(out)}),
            Error::Ok)
      << r.message();
  expect_close(out.values(), want, 0.0f, "max_pool1d");
  std::vector<float> want_avg = ref_avg(p, x.values(), false, 0, &oh, &ow);
  TestTensor aout(F, {2, 3, ow});
  ASSERT_EQ(r.run("aten::avg_pool1d.default", {r.tensor(x), r.ints({3}), r.ints({2}), r.ints({1}), r.b(true),
                                               r.b(false), r.tensor(aout)}),
            Error::Ok)
      << r.message();
  expect_close(aout.values(), want_avg, 1e-5f, "avg_pool1d");
}

TEST(PoolErrors, BadArguments) {
  KernelRunner r;
  TestTensor x(F, {1, 2, 6, 6}), out(F, {1, 2, 3, 3}), small(F, {1, 2, 2, 2});
  auto call = [&](std::vector<int64_t> k, std::vector<int64_t> pad, TestTensor& o) {
    return r.run("aten::max_pool2d.default", {r.tensor(x), r.ints(k), r.ints({}), r.ints(pad), r.ints({1, 1}),
                                              r.b(false), r.tensor(o)});
  };
  EXPECT_EQ(call({2, 2}, {0, 0}, out), Error::Ok);
  EXPECT_EQ(call({2, 2}, {0, 0}, small), Error::OutOfBounds);
  EXPECT_EQ(call({2, 2}, {2, 2}, out), Error::InvalidArgument);  // padding > kernel / 2
  EXPECT_EQ(call({0, 2}, {0, 0}, out), Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::max_pool2d.default", {r.tensor(x), r.ints({2, 2})}), Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
