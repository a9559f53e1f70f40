// embedding_bag (sum / mean / max, per-sample weights, padding_idx, include_last_offset) and
// its auxiliary outputs, against bags reduced by hand.
#include <vector>

#include "gtest/gtest.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {
namespace {

constexpr ScalarType F = ScalarType::Float32;
constexpr ScalarType I = ScalarType::Int64;

std::vector<int64_t> ints(TestTensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

// weight rows (1,2), (3,4), (5,6), (7,8); indices 0 2 | 1 3 3.
struct Bags {
  TestTensor weight{F, {4, 2}}, indices{I, {5}}, offsets{I, {2}}, psw{F, {5}};
  TestTensor out{F, {2, 2}};
  TestTensor offset2bag{I, {5}, 10, true}, bag_size{I, {2}, 10, true};
  // max_indices: [num_bags, D] for max, else shaped like bag_size.
  TestTensor max_indices{I, {2, 2}, 10, true}, unused_indices{I, {2}, 10, true};
  Bags() {
    weight.set({1, 2, 3, 4, 5, 6, 7, 8});
    const int64_t idx[5] = {0, 2, 1, 3, 3};
    for (int i = 0; i < 5; ++i) indices.data<int64_t>()[i] = idx[i];
    offsets.data<int64_t>()[0] = 0;
    offsets.data<int64_t>()[1] = 2;
    psw.set({1, 0.5f, 2, 1, -1});
  }
  // embedding_bag.padding_idx with padding_idx None unless given.
  Error run(KernelRunner& r, int64_t mode, bool weighted = false, EValue* padding = nullptr,
            const char* op = "aten::embedding_bag.padding_idx") {
    return r.run(op, {r.tensor(weight), r.tensor(indices), r.tensor(offsets), r.b(false), r.i(mode), r.b(false),
                      weighted ? r.tensor(psw) : r.none(), r.b(false), padding != nullptr ? padding : r.none(),
                      r.tensor(out), r.tensor(offset2bag), r.tensor(bag_size), r.tensor(mode == 2 ? max_indices : unused_indices)});
  }
};

TEST(EmbeddingBag, Sum) {
  KernelRunner r;
  Bags t;
  ASSERT_EQ(t.run(r, 0), Error::Ok) << r.message();
  expect_close(t.out.values(), {6, 8, 17, 20}, 0, "sum");
  EXPECT_EQ(t.offset2bag.sizes(), std::vector<int64_t>{0});  // ATen's fast sum path skips it
  EXPECT_EQ(t.bag_size.sizes(), std::vector<int64_t>{2});
  ASSERT_EQ(t.run(r, 0, /*weighted=*/true), Error::Ok) << r.message();
  // bag 0: 1*(1,2) + 0.5*(5,6); bag 1: 2*(3,4) + (7,8) - (7,8).
  expect_close(t.out.values(), {3.5f, 5, 6, 8}, 0, "per_sample_weights");
}

TEST(EmbeddingBag, MeanAndMax) {
  KernelRunner r;
  Bags t;
  ASSERT_EQ(t.run(r, 1), Error::Ok) << r.message();
  expect_close(t.out.values(), {3, 4, 17.0f / 3, 20.0f / 3}, 1e-6f, "mean");
  EXPECT_EQ(ints(t.offset2bag), (std::vector<int64_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(ints(t.bag_size), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(t.run(r, 2), Error::Ok) << r.message();
  expect_close(t.out.values(), {5, 6, 7, 8}, 0, "max");
  EXPECT_EQ(ints(t.max_indices), (std::vector<int64_t>{2, 2, 3, 3}));
}

TEST(EmbeddingBag, PaddingIdx) {
  KernelRunner r;
  Bags t;
  // Row 3 skipped and not counted: bag 1 is just row 1.
  ASSERT_EQ(t.run(r, 1, false, r.i(3)), Error::Ok) << r.message();
  expect_close(t.out.values(), {3, 4, 3, 4}, 0, "mean, padding_idx 3");
  EXPECT_EQ(ints(t.bag_size), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(t.offset2bag), (std::vector<int64_t>{0, 0, 1, 1, 1}));
  // embedding_bag.padding_idx wraps -1 to row 3 ...
  ASSERT_EQ(t.run(r, 0, false, r.i(-1)), Error::Ok) << r.message();
  expect_close(t.out.values(), {6, 8, 3, 4}, 0, "sum, padding_idx -1");
  // ... while for _embedding_bag_forward_only -1 means no padding.
  ASSERT_EQ(t.run(r, 0, false, r.i(-1), "aten::_embedding_bag_forward_only.default"), Error::Ok) << r.message();
  expect_close(t.out.values(), {6, 8, 17, 20}, 0, "forward_only, padding_idx -1");
  EXPECT_EQ(t.run(r, 0, false, r.i(4)), Error::InvalidArgument);
}

TEST(EmbeddingBag, IncludeLastOffsetAndEmptyBags) {
  KernelRunner r;
  Bags t;
  TestTensor offsets(I, {3});
  const int64_t o[3] = {0, 2, 2};  // bag 1 empty; the last offset ends bag 1
  for (int i = 0; i < 3; ++i) offsets.data<int64_t>()[i] = o[i];
  ASSERT_EQ(r.run("aten::embedding_bag.default",
                  {r.tensor(t.weight), r.tensor(t.indices), r.tensor(offsets), r.b(false), r.i(1), r.b(false), r.none(),
                   r.b(true), r.tensor(t.out), r.tensor(t.offset2bag), r.tensor(t.bag_size), r.tensor(t.unused_indices)}),
            Error::Ok)
      << r.message();
  expect_close(t.out.values(), {3, 4, 0, 0}, 0, "mean with an empty bag");
  EXPECT_EQ(ints(t.bag_size), (std::vector<int64_t>{2, 0}));
}

TEST(EmbeddingBag, RejectsBadArguments) {
  KernelRunner r;
  Bags t;
  t.indices.data<int64_t>()[1] = 4;
  EXPECT_EQ(t.run(r, 0), Error::OutOfBounds);
  t.indices.data<int64_t>()[1] = 2;
  t.offsets.data<int64_t>()[0] = 1;
  EXPECT_EQ(t.run(r, 0), Error::InvalidArgument);
  EXPECT_NE(r.message().find("offsets[0]"), std::string::npos) << r.message();
  t.offsets.data<int64_t>()[0] = 0;
  EXPECT_EQ(t.run(r, 1, /*weighted=*/true), Error::InvalidArgument);  // per_sample_weights need sum
  EXPECT_EQ(t.run(r, 3), Error::InvalidArgument);
}

}  // namespace
}  // namespace testing
}  // namespace ember
