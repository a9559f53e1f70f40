// gradient.scalarint: central differences inside, one- or two-sided differences at the edges.
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;
constexpr const char* kOp = "aten::gradient.scalarint";

TEST(Gradient, OneDimSpacingAndEdgeOrder) {
  KernelRunner r;
  TestTensor x(F, {5}), g1(F, {5}), g2(F, {5}), g3(F, {5});
  x.set({1, 2, 4, 7, 11});
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(1), r.tensor(g1)}), Error::Ok) << r.message();
  expect_close(g1.values(), {1, 1.5f, 2.5f, 3.5f, 4}, 0, "edge_order 1");
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.d(2.0), r.none(), r.i(1), r.tensor(g2)}), Error::Ok) << r.message();
  expect_close(g2.values(), {0.5f, 0.75f, 1.25f, 1.75f, 2}, 0, "spacing 2");
  // edge_order 2: -1.5*1 + 2*2 - 0.5*4 = 0.5 and 0.5*4 - 2*7 + 1.5*11 = 4.5.
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.i(1), r.none(), r.i(2), r.tensor(g3)}), Error::Ok) << r.message();
  expect_close(g3.values(), {0.5f, 1.5f, 2.5f, 3.5f, 4.5f}, 1e-6f, "edge_order 2");
}

TEST(Gradient, EveryDimOrOne) {
  KernelRunner r;
  TestTensor x(F, {2, 3}), d0(F, {2, 3}), d1(F, {2, 3}), last(F, {2, 3});
  x.set({1, 2, 4, 3, 5, 9});
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(1), r.tensor(d0), r.tensor(d1)}), Error::Ok) << r.message();
  expect_close(d0.values(), {2, 3, 5, 2, 3, 5}, 0, "dim 0");
  expect_close(d1.values(), {1, 1.5f, 2, 2, 3, 4}, 0, "dim 1");
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.i(-1), r.i(1), r.tensor(last)}), Error::Ok) << r.message();
  expect_close(last.values(), {1, 1.5f, 2, 2, 3, 4}, 0, "dim -1");
}

TEST(Gradient, IntegerInputGivesFloat) {
  KernelRunner r;
  TestTensor x(ScalarType::Int64, {3}), g(F, {3});
  x.data<int64_t>()[0] = 0;
  x.data<int64_t>()[1] = 1;
  x.data<int64_t>()[2] = 4;
  ASSERT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(1), r.tensor(g)}), Error::Ok) << r.message();
  expect_close(g.values(), {1, 2, 3}, 0);
}

TEST(Gradient, RejectsBadArguments) {
  KernelRunner r;
  TestTensor x(F, {2, 3}), a(F, {2, 3}), b(F, {2, 3}), s(F, {});
  TestTensor xi(F, {3}), oi(ScalarType::Int64, {3});
  // size 2 along dim 0 is too short for edge_order 2
  EXPECT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(2), r.tensor(a), r.tensor(b)}), Error::InvalidArgument);
  EXPECT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(3), r.tensor(a), r.tensor(b)}), Error::InvalidArgument);
  EXPECT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.none(), r.i(1), r.tensor(a)}), Error::InvalidArgument);  // 1 output for 2 dims
  EXPECT_EQ(r.run(kOp, {r.tensor(x), r.none(), r.i(2), r.i(1), r.tensor(a)}), Error::InvalidArgument);     // dim out of range
  EXPECT_EQ(r.run(kOp, {r.tensor(s), r.none(), r.none(), r.i(1), r.tensor(a)}), Error::InvalidArgument);   // 0-d
  EXPECT_EQ(r.run(kOp, {r.tensor(xi), r.none(), r.none(), r.i(1), r.tensor(oi)}), Error::InvalidArgument); // int output
  EXPECT_EQ(r.run(kOp, {r.tensor(xi), r.d(0.0), r.none(), r.i(1), r.tensor(a)}), Error::InvalidArgument);  // zero spacing
}

}  // namespace
}  // namespace testing
}  // namespace ember
