// The packed-weights cache shared by the XNNPACK delegates of one Program
// (delegates/xnnpack/runtime/weights_cache.h): a filter used twice in one partition, the same
// weights in two delegates of one Program (the second loaded after the first ran), different
// weights beside them, and the cache's lifetime. Every case also checks the numbers against a reference.
#include <gtest/gtest.h>

#include <memory>

#include "delegates/xnnpack/xnnpack_blob_builder.h"
#include "runtime/program/program.h"
#include "test/delegates/xnnpack/xnnpack_test_util.h"
#include "test/support/program_builder.h"
#include "test/support/test_programs.h"

namespace ember {
namespace xnnpack {
namespace testing {
namespace {

using ::ember::testing::Harness;
using ::ember::testing::ProgramBuilder;

constexpr int64_t kRows = 3, kK = 64;

// y = W (W x + b) + b: one [64, 64] filter (and bias) feeding two fully connected nodes.
struct TwiceModel {
  std::vector<float> w, b;
  explicit TwiceModel(std::mt19937& rng) : w(random_vector(kK * kK, rng, -0.2f, 0.2f)), b(random_vector(kK, rng)) {}
  std::vector<uint8_t> blob() const {
    XnnBlobBuilder bb;
    uint32_t x = bb.input({size_t(kRows), size_t(kK)});
    uint32_t wt = bb.constant({size_t(kK), size_t(kK)}, w.data());
    uint32_t bt = bb.constant({size_t(kK)}, b.data());
    uint32_t h = bb.node(fb::OpType::FullyConnected, {x, wt, bt});
    bb.mark_output(bb.node(fb::OpType::FullyConnected, {h, wt, bt}));
    EXPECT_TRUE(bb.ok()) << bb.error();
    return bb.build();
  }
  std::vector<float> reference(const std::vector<float>& x) const {
    return ref_linear(ref_linear(x, kRows, kK, w, kK, b.data()), kRows, kK, w, kK, b.data());
  }
};

// Runs `r` once on random input and checks the result against `model`.
void run_and_check(Runner& r, const TwiceModel& model, std::mt19937& rng) {
  HostTensor x({kRows, kK}), y({kRows, kK});
  std::vector<float> in = random_vector(kRows * kK, rng);
  x.fill(in);
  ASSERT_EQ(r.run({&x, &y}), Error::Ok) << r.message();
  EXPECT_LT(max_error(y.values(), model.reference(in)), 1e-4);
}

class XnnpackWeightsCache : public ::testing::Test {
 protected:
  void SetUp() override {
    ProgramBuilder pb;
    ::ember::testing::add_broadcast_method(pb, "forward", false);
    pte_ = pb.build();
    ASSERT_EQ(h_.load(pte_), Error::Ok) << h_.message();
  }
  const Program* program() { return &h_.program(); }
  ::ember::testing::PteBytes pte_;
  Harness h_;
};

TEST_F(XnnpackWeightsCache, OneFilterTwoNodesIsPackedOnce) {
  std::mt19937 rng(1);
  TwiceModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob(), {}, program()), Error::Ok) << r.message();
  EXPECT_TRUE(r.stats().shares_weights);
  ProgramWeightsStats s = program_weights_stats(r.handle());
  EXPECT_TRUE(s.shared);
  EXPECT_EQ(s.packings, 1u) << "the second node must find the filter packed";
  EXPECT_GE(s.reuses, 1u);
  EXPECT_GE(s.packed_bytes, uint64_t(kK * kK * sizeof(float)));
  EXPECT_LT(s.packed_bytes, uint64_t(2 * kK * kK * sizeof(float)));
  run_and_check(r, model, rng);
  run_and_check(r, model, rng);  // same runtime again
}

TEST_F(XnnpackWeightsCache, SameWeightsInTwoDelegatesShareOneCopyAtAnyTime) {
  std::mt19937 rng(2);
  TwiceModel model(rng);
  Runner a, b;
  // Two delegates with their own (identical) copies of the weights: found by content.
  ASSERT_EQ(a.init(model.blob(), {}, program()), Error::Ok) << a.message();
  run_and_check(a, model, rng);
  ASSERT_EQ(b.init(model.blob(), {}, program()), Error::Ok) << b.message();
  ProgramWeightsStats s = program_weights_stats(b.handle());
  EXPECT_EQ(s.packings, 1u);
  EXPECT_GE(s.reuses, 3u);  // a's second node by key; b's first node by content, second by key
  run_and_check(b, model, rng);
  run_and_check(a, model, rng);

  // Different weights in a third delegate: a second block; everybody still right.
  TwiceModel different(rng);
  Runner other;
  ASSERT_EQ(other.init(different.blob(), {}, program()), Error::Ok) << other.message();
  s = program_weights_stats(other.handle());
  EXPECT_EQ(s.packings, 2u);
  run_and_check(other, different, rng);
  run_and_check(a, model, rng);
  run_and_check(b, model, rng);
}

TEST_F(XnnpackWeightsCache, TheCacheDiesWithTheProgramsLastDelegate) {
  std::mt19937 rng(3);
  TwiceModel model(rng);
  {
    Runner r;
    ASSERT_EQ(r.init(model.blob(), {}, program()), Error::Ok) << r.message();
    run_and_check(r, model, rng);
  }
  // A fresh cache (not finalised, empty): new weights are packed into it again.
  TwiceModel next(rng);
  Runner r;
  ASSERT_EQ(r.init(next.blob(), {}, program()), Error::Ok) << r.message();
  ProgramWeightsStats s = program_weights_stats(r.handle());
  EXPECT_EQ(s.packings, 1u);
  EXPECT_EQ(s.reuses, 1u);
  run_and_check(r, next, rng);
}

TEST_F(XnnpackWeightsCache, NoProgramNoSharing) {
  std::mt19937 rng(4);
  TwiceModel model(rng);
  Runner r;
  ASSERT_EQ(r.init(model.blob()), Error::Ok) << r.message();
  EXPECT_FALSE(r.stats().shares_weights);
  EXPECT_FALSE(program_weights_stats(r.handle()).shared);
  run_and_check(r, model, rng);
}

}  // namespace
}  // namespace testing
}  // namespace xnnpack
}  // namespace ember
