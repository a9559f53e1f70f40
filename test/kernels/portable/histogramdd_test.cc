// histogramdd and its two core parts (_histogramdd_bin_edges, _histogramdd_from_bin_cts) on
// points binned by hand.
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;

// Points (0,0), (1,1), (2,0.5), (4,2): edges [0,2,4] x [0,1,2] from the data.
struct Points {
  TestTensor x{F, {4, 2}}, w{F, {4}};
  Points() {
    x.set({0, 0, 1, 1, 2, 0.5f, 4, 2});
    w.set({1, 2, 3, 4});
  }
};

EValue double_list(const std::vector<double>& v) {
  EValue e;
  e.tag = ValueTag::DoubleList;
  e.as_double_list = Span<const double>(v.data(), v.size());
  return e;
}

TEST(Histogramdd, EdgesFromDataAndWeights) {
  KernelRunner r;
  Points p;
  TestTensor hist(F, {2, 2}), e0(F, {3}), e1(F, {3});
  ASSERT_EQ(r.run("aten::histogramdd.default", {r.tensor(p.x), r.ints({2, 2}), r.none(), r.none(), r.b(false),
                                                r.tensor(hist), r.tensor(e0), r.tensor(e1)}),
            Error::Ok)
      << r.message();
  expect_close(e0.values(), {0, 2, 4}, 0, "edges 0");
  expect_close(e1.values(), {0, 1, 2}, 0, "edges 1");
  // (1,1) sits on the inner edge of dim 1 (bin 1); (4,2) on both right edges (last bins).
  expect_close(hist.values(), {1, 1, 1, 1}, 0, "counts");
  ASSERT_EQ(r.run("aten::histogramdd.default", {r.tensor(p.x), r.ints({2, 2}), r.none(), r.tensor(p.w), r.b(false),
                                                r.tensor(hist), r.tensor(e0), r.tensor(e1)}),
            Error::Ok);
  expect_close(hist.values(), {1, 2, 3, 4}, 0, "weighted");
  // density: weights / total 10 / bin area 2.
  ASSERT_EQ(r.run("aten::histogramdd.default", {r.tensor(p.x), r.ints({2, 2}), r.none(), r.tensor(p.w), r.b(true),
                                                r.tensor(hist), r.tensor(e0), r.tensor(e1)}),
            Error::Ok);
  expect_close(hist.values(), {0.05f, 0.1f, 0.15f, 0.2f}, 1e-6f, "density");
}

TEST(Histogramdd, RangeDropsOutsidePoints) {
  KernelRunner r;
  Points p;
  std::vector<double> range = {0, 2, 0, 2};
  EValue rv = double_list(range);
  TestTensor hist(F, {2, 2});
  // Edges [0,1,2] in both dims: (4,2) is dropped, (2,0.5) lands in the last bin of dim 0.
  ASSERT_EQ(r.run("aten::_histogramdd_from_bin_cts.default",
                  {r.tensor(p.x), r.ints({2, 2}), &rv, r.none(), r.b(false), r.tensor(hist)}),
            Error::Ok)
      << r.message();
  expect_close(hist.values(), {1, 0, 1, 1}, 0);
  TestTensor e0(F, {3}), e1(F, {3});
  ASSERT_EQ(r.run("aten::_histogramdd_bin_edges.default",
                  {r.tensor(p.x), r.ints({2, 2}), &rv, r.none(), r.b(false), r.tensor(e0), r.tensor(e1)}),
            Error::Ok)
      << r.message();
  expect_close(e0.values(), {0, 1, 2}, 0);
  expect_close(e1.values(), {0, 1, 2}, 0);
}

TEST(Histogramdd, EqualMinAndMaxWidenByHalf) {
  KernelRunner r;
  TestTensor x(F, {2, 1}), hist(F, {1}), e(F, {2});
  x.set({3, 3});
  ASSERT_EQ(r.run("aten::histogramdd.default",
                  {r.tensor(x), r.ints({1}), r.none(), r.none(), r.b(false), r.tensor(hist), r.tensor(e)}),
            Error::Ok)
      << r.message();
  expect_close(e.values(), {2.5f, 3.5f}, 0);
  expect_close(hist.values(), {2}, 0);
}

TEST(Histogramdd, RejectsBadArguments) {
  KernelRunner r;
  Points p;
  TestTensor hist(F, {2, 2}), hist1(F, {2}), e0(F, {3}), e1(F, {3});
  EXPECT_EQ(r.run("aten::_histogramdd_from_bin_cts.default",
                  {r.tensor(p.x), r.ints({2, 0}), r.none(), r.none(), r.b(false), r.tensor(hist)}),
            Error::InvalidArgument);
  EXPECT_EQ(r.run("aten::_histogramdd_from_bin_cts.default",
                  {r.tensor(p.x), r.ints({2}), r.none(), r.none(), r.b(false), r.tensor(hist1)}),
            Error::InvalidArgument);  // 2 coordinates, 1 bins entry
  std::vector<double> bad = {1, 0, 0, 1};
  EValue rv = double_list(bad);
  EXPECT_EQ(r.run("aten::_histogramdd_from_bin_cts.default",
                  {r.tensor(p.x), r.ints({2, 2}), &rv, r.none(), r.b(false), r.tensor(hist)}),
            Error::InvalidArgument);  // min > max
  EXPECT_EQ(r.run("aten::histogramdd.default", {r.tensor(p.x), r.ints({2, 2}), r.none(), r.none(), r.b(false),
                                                r.tensor(hist), r.tensor(e0)}),
            Error::InvalidArgument);  // one edge output missing
}

}  // namespace
}  // namespace testing
}  // namespace ember
