// Batch / layer / group / RMS normalisation against straightforward reference loops.
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

// Normalises each of `groups` consecutive blocks of `size` elements; affine index = (i / per) % na.
std::vector<float> ref_norm_blocks(const std::vector<float>& x, int64_t size, double eps, const float* w,
                                   const float* b, int64_t per, int64_t na, std::vector<float>* means,
                                   std::vector<float>* rstds) {
  std::vector<float> out(x.size());
  for (size_t start = 0; start < x.size(); start += static_cast<size_t>(size)) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += x[start + i];
    mean /= size;
    for (int64_t i = 0; i < size; ++i) var += (x[start + i] - mean) * (x[start + i] - mean);
    var /= size;
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < size; ++i) {
      const int64_t ai = (i / per) % na;
      out[start + i] = static_cast<float>((x[start + i] - mean) * rstd * (w ? w[ai] : 1.0) + (b ? b[ai] : 0.0));
    }
    if (means) means->push_back(static_cast<float>(mean));
    if (rstds) rstds->push_back(static_cast<float>(rstd));
  }
  return out;
}

TEST(BatchNorm, EvalModeAllOverloads) {
  std::mt19937 rng(31);
  ReverseOrderPool pool(3);
  const std::vector<std::vector<int64_t>> shapes = {{1, 1}, {2, 3}, {2, 5, 7}, {3, 17, 9, 11}, {1, 7, 1, 1}};
  for (const auto& shape : shapes) {
    KernelRunner r(1 << 20, &pool);
    const int64_t c = shape[1];
    TestTensor x(F, shape), w(F, {c}), b(F, {c}), mean(F, {c}), var(F, {c}), out(F, shape), out2(F, shape),
        out3(F, shape), sm(F, {0}), si(F, {0});
    x.fill_random(rng);
    w.fill_random(rng);
    b.fill_random(rng);
    mean.fill_random(rng);
    var.fill_random(rng, 0.1f, 2.0f);
    int64_t inner = 1;
    for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
    std::vector<float> want(x.numel());
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t ch = (i / inner) % c;
      want[i] = static_cast<float>((x.f()[i] - mean.f()[ch]) / std::sqrt(double(var.f()[ch]) + 1e-3) * w.f()[ch] +
                                   b.f()[ch]);
    }
    ASSERT_EQ(r.run("aten::batch_norm.default",
                    {r.tensor(x), r.tensor(w), r.tensor(b), r.tensor(mean), r.tensor(var), r.b(false), r.d(0.1),
                     r.d(1e-3), r.b(true), r.tensor(out)}),
              Error::Ok)
        << r.message();
    expect_close(out.values(), want, 1e-5f, "batch_norm");
    ASSERT_EQ(r.run("aten::_native_batch_norm_legit_no_training.default",
                    {r.tensor(x), r.tensor(w), r.tensor(b), r.tensor(mean), r.tensor(var), r.d(0.1), r.d(1e-3),
                     r.tensor(out2), r.tensor(sm), r.tensor(si)}),
              Error::Ok)
        << r.message();
    expect_close(out2.values(), want, 1e-5f, "_native_batch_norm_legit_no_training");
    EXPECT_EQ(sm.numel(), 0);
    ASSERT_EQ(r.run("aten::native_batch_norm.default",
                    {r.tensor(x), r.tensor(w), r.tensor(b), r.tensor(mean), r.tensor(var), r.b(false), r.d(0.1),
                     r.d(1e-3), r.tensor(out3), r.tensor(sm), r.tensor(si)}),
              Error::Ok)
        << r.message();
    expect_close(out3.values(), want, 1e-5f, "native_batch_norm");
  }
}

TEST(BatchNorm, NoAffineAndTrainingStatistics) {
  std::mt19937 rng(32);
  KernelRunner r;
  TestTensor x(F, {4, 3, 5}), out(F, {4, 3, 5}), sm(F, {3}), si(F, {3});
  x.fill_random(rng);
  ASSERT_EQ(r.run("aten::native_batch_norm.default",
                  {r.tensor(x), r.none(), r.none(), r.none(), r.none(), r.b(true), r.d(0.1), r.d(1e-5),
                   r.tensor(out), r.tensor(sm), r.tensor(si)}),
            Error::Ok)
      << r.message();
  for (int64_t ch = 0; ch < 3; ++ch) {
    double mean = 0, var = 0;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 5; ++i) mean += x.f()[(n * 3 + ch) * 5 + i];
    mean /= 20;
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 5; ++i) var += std::pow(x.f()[(n * 3 + ch) * 5 + i] - mean, 2);
    var /= 20;
    EXPECT_NEAR(sm.f()[ch], mean, 1e-5);
    EXPECT_NEAR(si.f()[ch], 1.0 / std::sqrt(var + 1e-5), 1e-3);
    for (int n = 0; n < 4; ++n)
      for (int i = 0; i < 5; ++i)
        EXPECT_NEAR(out.f()[(n * 3 + ch) * 5 + i], (x.f()[(n * 3 + ch) * 5 + i] - mean) / std::sqrt(var + 1e-5), 1e-4);
  }
  // Evaluation mode without running statistics is an error.
  EXPECT_EQ(r.run("aten::batch_norm.default", {r.tensor(x), r.none(), r.none(), r.none(), r.none(), r.b(false),
                                               r.d(0.1), r.d(1e-5), r.b(false), r.tensor(out)}),
            Error::InvalidArgument);
}

TEST(LayerNorm, MatchesReferenceWithStatistics) {
  std::mt19937 rng(33);
  ReverseOrderPool pool(2);
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int64_t> normalized;
  };
  const Case cases[] = {{{1, 1}, {1}}, {{3, 7}, {7}}, {{2, 5, 33}, {33}}, {{2, 3, 4, 5}, {4, 5}}, {{17}, {17}}};
  for (const Case& cs : cases) {
    for (int affine = 0; affine < 3; ++affine) {  // both, weight only, none
      KernelRunner r(1 << 20, &pool);
      int64_t inner = 1;
      for (int64_t s : cs.normalized) inner *= s;
      TestTensor x(F, cs.shape), w(F, cs.normalized), b(F, cs.normalized), out(F, cs.shape), out2(F, cs.shape);
      std::vector<int64_t> stat_shape = cs.shape;
      for (size_t i = stat_shape.size() - cs.normalized.size(); i < stat_shape.size(); ++i) stat_shape[i] = 1;
      TestTensor mean(F, stat_shape), rstd(F, stat_shape);
      x.fill_random(rng, -3, 3);
      w.fill_random(rng);
      b.fill_random(rng);
      std::vector<float> means, rstds;
      std::vector<float> want = ref_norm_blocks(x.values(), inner, 1e-5, affine < 2 ? w.f() : nullptr,
                                                affine == 0 ? b.f() : nullptr, 1, inner, &means, &rstds);
      EValue* wa = affine < 2 ? r.tensor(w) : r.none();
      EValue* ba = affine == 0 ? r.tensor(b) : r.none();
      ASSERT_EQ(r.run("aten::layer_norm.default",
                      {r.tensor(x), r.ints(cs.normalized), wa, ba, r.d(1e-5), r.b(true), r.tensor(out)}),
                Error::Ok)
          << r.message();
      expect_close(out.values(), want, 1e-5f, "layer_norm");
      ASSERT_EQ(r.run("aten::native_layer_norm.default", {r.tensor(x), r.ints(cs.normalized), wa, ba, r.d(1e-5),
                                                          r.tensor(out2), r.tensor(mean), r.tensor(rstd)}),
                Error::Ok)
          << r.message();
      expect_close(out2.values(), want, 1e-5f, "native_layer_norm");
      expect_close(mean.values(), means, 1e-5f, "mean");
      expect_close(rstd.values(), rstds, 1e-5f, "rstd");
    }
  }
}

TEST(LayerNorm, Errors) {
  KernelRunner r;
  TestTensor x(F, {2, 6}), w(F, {5}), out(F, {2, 6}), small(F, {2, 5});
  EXPECT_EQ(r.run("aten::layer_norm.default", {r.tensor(x), r.ints({5}), r.none(), r.none(), r.d(1e-5),
                                               r.b(true), r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::layer_norm.default", {r.tensor(x), r.ints({6}), r.tensor(w), r.none(), r.d(1e-5),
                                               r.b(true), r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::layer_norm.default", {r.tensor(x), r.ints({6}), r.none(), r.none(), r.d(1e-5),
                                               r.b(true), r.tensor(small)}),
            Error::OutOfBounds);
  EXPECT_EQ(r.run("aten::native_layer_norm.default", {r.tensor(x), r.ints({6}), r.none(), r.none(), r.d(1e-5),
                                                      r.tensor(out)}),
            Error::InvalidArgument);
}

TEST(GroupNorm, BothOverloads) {
  std::mt19937 rng(34);
  KernelRunner r;
  const int64_t n = 2, c = 6, h = 5, w = 3, groups = 3;
  TestTensor x(F, {n, c, h, w}), wt(F, {c}), b(F, {c}), out(F, {n, c, h, w}), out2(F, {n, c, h, w}),
      mean(F, {n, groups}), rstd(F, {n, groups});
  x.fill_random(rng);
  wt.fill_random(rng);
  b.fill_random(rng);
  std::vector<float> means, rstds;
  std::vector<float> want = ref_norm_blocks(x.values(), (c / groups) * h * w, 1e-5, wt.f(), b.f(), h * w, c,
                                            &means, &rstds);
  // Affine index for group blocks: channel = g * cpg + i / hw, so fix up per block.
  for (int64_t ng = 0; ng < n * groups; ++ng) {
    for (int64_t i = 0; i < (c / groups) * h * w; ++i) {
      const int64_t idx = ng * (c / groups) * h * w + i;
      const int64_t ch = (ng % groups) * (c / groups) + i / (h * w);
      want[idx] = (x.f()[idx] - means[ng]) * rstds[ng] * wt.f()[ch] + b.f()[ch];
    }
  }
  ASSERT_EQ(r.run("aten::group_norm.default",
                  {r.tensor(x), r.i(groups), r.tensor(wt), r.tensor(b), r.d(1e-5), r.b(true), r.tensor(out)}),
            Error::Ok)
      << r.message();
  expect_close(out.values(), want, 1e-5f, "group_norm");
  ASSERT_EQ(r.run("aten::native_group_norm.default",
                  {r.tensor(x), r.tensor(wt), r.tensor(b), r.i(n), r.i(c), r.i(h * w), r.i(groups), r.d(1e-5),
                   r.tensor(out2), r.tensor(mean), r.tensor(rstd)}),
            Error::Ok)
      << r.message();
  expect_close(out2.values(), want, 1e-5f, "native_group_norm");
  expect_close(mean.values(), means, 1e-5f, "mean");
  expect_close(rstd.values(), rstds, 1e-5f, "rstd");
  EXPECT_EQ(r.run("aten::group_norm.default",
                  {r.tensor(x), r.i(4), r.none(), r.none(), r.d(1e-5), r.b(true), r.tensor(out)}),
            Error::InvalidArgument);
}

TEST(RmsNorm, WithAndWithoutWeightAndEps) {
  std::mt19937 rng(35);
  KernelRunner r;
  TestTensor x(F, {3, 17}), w(F, {17}), out(F, {3, 17});
  x.fill_random(rng);
  w.fill_random(rng);
  for (int variant = 0; variant < 2; ++variant) {
    const double eps = variant == 0 ? 1e-6 : 1.1920928955078125e-07;
    std::vector<float> want(x.numel());
    for (int row = 0; row < 3; ++row) {
      double ms = 0;
      for (int i = 0; i < 17; ++i) ms += double(x.f()[row * 17 + i]) * x.f()[row * 17 + i];
      ms /= 17;
      for (int i = 0; i < 17; ++i)
        want[row * 17 + i] = static_cast<float>(x.f()[row * 17 + i] / std::sqrt(ms + eps) * (variant == 0 ? w.f()[i] : 1.0f));
    }
    ASSERT_EQ(r.run("aten::rms_norm.default", {r.tensor(x), r.ints({17}), variant == 0 ? r.tensor(w) : r.none(),
                                               variant == 0 ? r.d(eps) : r.none(), r.tensor(out)}),
              Error::Ok)
        << r.message();
    expect_close(out.values(), want, 1e-5f, "rms_norm");
  }
}

}  // namespace
}  // namespace testing
}  // namespace ember
