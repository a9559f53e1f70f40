// linear / addmm / mm / bmm / baddbmm / matmul / mv / addmv / dot against naive loops.
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

// C[m x n] = A[m x k] * B[k x n], with A(i,p) = a[i*ars + p*acs], B(p,j) = b[p*brs + j*bcs].
std::vector<float> ref_mm(const float* a, int64_t ars, int64_t acs, const float* b, int64_t brs,
                          int64_t bcs, int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[i * ars + p * acs]) * b[p * brs + j * bcs];
      c[i * n + j] = static_cast<float>(s);
    }
  }
  return c;
}

struct Dims {
  int64_t m, n, k;
};

class LinalgTest : public ::testing::TestWithParam<int> {};  // param: 0 serial, 1 pool, 2 no temp

void configure(KernelRunner& r, ReverseOrderPool& pool, int mode) {
  if (mode == 1) r.set_pool(&pool);
  if (mode == 2) r.set_use_temp(false);
}

TEST_P(LinalgTest, LinearMatchesReference) {
  std::mt19937 rng(1);
  ReverseOrderPool pool(3);
  const Dims cases[] = {{1, 1, 1},   {1, 17, 33}, {2, 33, 7},   {3, 7, 17},  {7, 17, 3},
                        {17, 33, 65}, {33, 1, 9},  {64, 48, 300}, {13, 130, 257}, {1, 100, 600}};
  for (const Dims& d : cases) {
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      KernelRunner r;
      configure(r, pool, GetParam());
      TestTensor x(F, {d.m, d.k}), w(F, {d.n, d.k}), bias(F, {d.n}), out(F, {d.m, d.n});
      x.fill_random(rng);
      w.fill_random(rng);
      bias.fill_random(rng);
      Error e = r.run("aten::linear.default",
                      {r.tensor(x), r.tensor(w), with_bias ? r.tensor(bias) : r.none(), r.tensor(out)});
      ASSERT_EQ(e, Error::Ok) << r.message();
      std::vector<float> want = ref_mm(x.f(), d.k, 1, w.f(), 1, d.k, d.m, d.n, d.k);
      if (with_bias) {
        for (int64_t i = 0; i < d.m; ++i)
          for (int64_t j = 0; j < d.n; ++j) want[i * d.n + j] += bias.f()[j];
      }
      expect_close(out.values(), want, 1e-4f, "linear");
      EXPECT_TRUE(out.guard_ok());
    }
  }
}

TEST_P(LinalgTest, Linear3dInputAndDynamicOutput) {
  std::mt19937 rng(2);
  ReverseOrderPool pool(2);
  KernelRunner r;
  configure(r, pool, GetParam());
  TestTensor x(F, {2, 5, 9}), w(F, {11, 9}), out(F, {4, 8, 11}, 4 * 8 * 11, /*dynamic=*/true);
  x.fill_random(rng);
  w.fill_random(rng);
  ASSERT_EQ(r.run("aten::linear.default", {r.tensor(x), r.tensor(w), r.none(), r.tensor(out)}),
            Error::Ok);
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{2, 5, 11}));
  expect_close(out.values(), ref_mm(x.f(), 9, 1, w.f(), 1, 9, 10, 11, 9));
  EXPECT_TRUE(out.guard_ok());
}

TEST_P(LinalgTest, AddmmBetaAlphaAndBroadcastSelf) {
  std::mt19937 rng(3);
  ReverseOrderPool pool(4);
  const Dims cases[] = {{1, 5, 3}, {7, 17, 33}, {33, 17, 7}, {50, 70, 300}, {2, 300, 40}};
  for (const Dims& d : cases) {
    for (int self_kind = 0; self_kind < 3; ++self_kind) {  // [n], [m, 1], [m, n]
      KernelRunner r;
      configure(r, pool, GetParam());
      std::vector<int64_t> self_shape = self_kind == 0   ? std::vector<int64_t>{d.n}
                                        : self_kind == 1 ? std::vector<int64_t>{d.m, 1}
                                                         : std::vector<int64_t>{d.m, d.n};
      TestTensor self(F, self_shape), a(F, {d.m, d.k}), b(F, {d.k, d.n}), out(F, {d.m, d.n});
      self.fill_random(rng);
      a.fill_random(rng);
      b.fill_random(rng);
      out.fill(NAN);  // beta path must not read out before writing it
      ASSERT_EQ(r.run("aten::addmm.default", {r.tensor(self), r.tensor(a), r.tensor(b), r.d(0.5),
                                              r.d(2.0), r.tensor(out)}),
                Error::Ok)
          << r.message();
      std::vector<float> want = ref_mm(a.f(), d.k, 1, b.f(), d.n, 1, d.m, d.n, d.k);
      for (int64_t i = 0; i < d.m; ++i) {
        for (int64_t j = 0; j < d.n; ++j) {
          float s = self_kind == 0 ? self.f()[j] : self_kind == 1 ? self.f()[i] : self.f()[i * d.n + j];
          want[i * d.n + j] = 0.5f * s + 2.0f * want[i * d.n + j];
        }
      }
      expect_close(out.values(), want, 1e-4f, "addmm");
    }
  }
}

TEST_P(LinalgTest, MmAndBmm) {
  std::mt19937 rng(4);
  ReverseOrderPool pool(2);
  const Dims cases[] = {{1, 1, 1}, {3, 7, 17}, {17, 3, 7}, {40, 33, 100}, {100, 97, 513}};
  for (const Dims& d : cases) {
    KernelRunner r;
    configure(r, pool, GetParam());
    TestTensor a(F, {d.m, d.k}), b(F, {d.k, d.n}), out(F, {d.m, d.n});
    a.fill_random(rng);
    b.fill_random(rng);
    out.fill(NAN);
    ASSERT_EQ(r.run("aten::mm.default", {r.tensor(a), r.tensor(b), r.tensor(out)}), Error::Ok);
    expect_close(out.values(), ref_mm(a.f(), d.k, 1, b.f(), d.n, 1, d.m, d.n, d.k), 1e-4f, "mm");

    const int64_t batch = 3;
    TestTensor x(F, {batch, d.m, d.k}), y(F, {batch, d.k, d.n}), bout(F, {batch, d.m, d.n});
    x.fill_random(rng);
    y.fill_random(rng);
    ASSERT_EQ(r.run("aten::bmm.default", {r.tensor(x), r.tensor(y), r.tensor(bout)}), Error::Ok);
    std::vector<float> want;
    for (int64_t i = 0; i < batch; ++i) {
      std::vector<float> c = ref_mm(x.f() + i * d.m * d.k, d.k, 1, y.f() + i * d.k * d.n, d.n, 1,
                                    d.m, d.n, d.k);
      want.insert(want.end(), c.begin(), c.end());
    }
    expect_close(bout.values(), want, 1e-4f, "bmm");
    EXPECT_TRUE(bout.guard_ok());
  }
}

TEST_P(LinalgTest, MatmulBroadcastAndVectors) {
  std::mt19937 rng(5);
  ReverseOrderPool pool(2);
  KernelRunner r;
  configure(r, pool, GetParam());
  // [2, 1, 5, 7] @ [3, 7, 9] -> [2, 3, 5, 9]
  TestTensor x(F, {2, 1, 5, 7}), y(F, {3, 7, 9}), out(F, {2, 3, 5, 9});
  x.fill_random(rng);
  y.fill_random(rng);
  ASSERT_EQ(r.run("aten::matmul.default", {r.tensor(x), r.tensor(y), r.tensor(out)}), Error::Ok)
      << r.message();
  std::vector<float> want;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      std::vector<float> c = ref_mm(x.f() + i * 35, 7, 1, y.f() + j * 63, 9, 1, 5, 9, 7);
      want.insert(want.end(), c.begin(), c.end());
    }
  }
  expect_close(out.values(), want, 1e-4f, "matmul batch");

  // [4, 5, 7] @ [7] -> [4, 5]
  TestTensor x3(F, {4, 5, 7}), v(F, {7}), out2(F, {4, 5});
  x3.fill_random(rng);
  v.fill_random(rng);
  ASSERT_EQ(r.run("aten::matmul.default", {r.tensor(x3), r.tensor(v), r.tensor(out2)}), Error::Ok);
  expect_close(out2.values(), ref_mm(x3.f(), 7, 1, v.f(), 1, 1, 20, 1, 7), 1e-4f, "matmul mv");

  // [7] @ [2, 7, 3] -> [2, 3]
  TestTensor y3(F, {2, 7, 3}), out3(F, {2, 3});
  y3.fill_random(rng);
  ASSERT_EQ(r.run("aten::matmul.default", {r.tensor(v), r.tensor(y3), r.tensor(out3)}), Error::Ok);
  std::vector<float> w3;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> c = ref_mm(v.f(), 7, 1, y3.f() + i * 21, 3, 1, 1, 3, 7);
    w3.insert(w3.end(), c.begin(), c.end());
  }
  expect_close(out3.values(), w3, 1e-4f, "matmul vm");

  // [7] @ [7] -> []
  TestTensor out4(F, {});
  ASSERT_EQ(r.run("aten::matmul.default", {r.tensor(v), r.tensor(v), r.tensor(out4)}), Error::Ok);
  expect_close(out4.values(), ref_mm(v.f(), 7, 1, v.f(), 1, 1, 1, 1, 7), 1e-4f, "matmul dot");
}

TEST_P(LinalgTest, MvAddmvDotBaddbmm) {
  std::mt19937 rng(6);
  ReverseOrderPool pool(2);
  KernelRunner r;
  configure(r, pool, GetParam());
  TestTensor mat(F, {33, 17}), vec(F, {17}), self(F, {33}), out(F, {33});
  mat.fill_random(rng);
  vec.fill_random(rng);
  self.fill_random(rng);
  std::vector<float> mv = ref_mm(mat.f(), 17, 1, vec.f(), 1, 1, 33, 1, 17);
  ASSERT_EQ(r.run("aten::mv.default", {r.tensor(mat), r.tensor(vec), r.tensor(out)}), Error::Ok);
  expect_close(out.values(), mv, 1e-4f, "mv");
  ASSERT_EQ(r.run("aten::addmv.default", {r.tensor(self), r.tensor(mat), r.tensor(vec), r.d(2.0),
                                          r.i(3), r.tensor(out)}),
            Error::Ok);
  std::vector<float> want(33);
  for (int i = 0; i < 33; ++i) want[i] = 2.0f * self.f()[i] + 3.0f * mv[i];
  expect_close(out.values(), want, 1e-4f, "addmv");

  TestTensor d(F, {});
  ASSERT_EQ(r.run("aten::dot.default", {r.tensor(vec), r.tensor(vec), r.tensor(d)}), Error::Ok);
  expect_close(d.values(), ref_mm(vec.f(), 17, 1, vec.f(), 1, 1, 1, 1, 17), 1e-5f, "dot");

  TestTensor bs(F, {1, 5}), x(F, {2, 3, 4}), y(F, {2, 4, 5}), bo(F, {2, 3, 5});
  bs.fill_random(rng);
  x.fill_random(rng);
  y.fill_random(rng);
  ASSERT_EQ(r.run("aten::baddbmm.default",
                  {r.tensor(bs), r.tensor(x), r.tensor(y), r.d(-1.0), r.d(0.5), r.tensor(bo)}),
            Error::Ok)
      << r.message();
  std::vector<float> wb;
  for (int b = 0; b < 2; ++b) {
    std::vector<float> c = ref_mm(x.f() + b * 12, 4, 1, y.f() + b * 20, 5, 1, 3, 5, 4);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) wb.push_back(-bs.f()[j] + 0.5f * c[i * 5 + j]);
  }
  expect_close(bo.values(), wb, 1e-4f, "baddbmm");
}

INSTANTIATE_TEST_SUITE_P(Modes, LinalgTest, ::testing::Values(0, 1, 2));

TEST(LinalgErrors, WrongArgumentsAndShapes) {
  KernelRunner r;
  TestTensor a(F, {3, 4}), b(F, {4, 5}), bad(F, {5, 5}), out(F, {3, 5}), small(F, {3, 4});
  EXPECT_EQ(r.run("aten::mm.default", {r.tensor(a), r.tensor(b)}), Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::mm.default", {r.tensor(a), r.tensor(bad), r.tensor(out)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::mm.default", {r.tensor(a), r.tensor(b), r.tensor(small)}), Error::OutOfBounds);
  EXPECT_NE(r.message().find("aten::mm.default"), std::string::npos);
  EXPECT_EQ(r.run("aten::mm.default", {r.tensor(a), r.i(3), r.tensor(out)}), Error::InvalidArgument);
  TestTensor ints(ScalarType::Int32, {3, 4});
  EXPECT_EQ(r.run("aten::mm.default", {r.tensor(ints), r.tensor(b), r.tensor(out)}),
            Error::InvalidArgument);
  TestTensor w(F, {5, 3});
  EXPECT_EQ(r.run("aten::linear.default", {r.tensor(a), r.tensor(w), r.none(), r.tensor(out)}),
            Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
