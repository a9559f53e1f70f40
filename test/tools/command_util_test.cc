// tools/commands/command_util.h: `ember run --zeros / --random` inputs, the input description
// `ember run` prints when it is given none, and TextStream (ember generate ends its text's
// line once before the statistics).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/loader/buffer_data_loader.h"
#include "extension/module/tensor_ptr.h"
#include "runtime/program/program.h"
#include "test/support/program_builder.h"
#include "tools/commands/command_util.h"

namespace ember {
namespace {

using testing::MethodBuilder;
using testing::ProgramBuilder;
using testing::PteBytes;
using tools::SyntheticInputs;

// forward(x float32[<=4, 3] dynamic, ids int64[64], mask bool[64], h float16[8], n int).
class CommandUtilTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t x = m.input_tensor(ScalarType::Float32, {4, 3}, /*dynamic=*/true);
    uint32_t ids = m.input_tensor(ScalarType::Int64, {64});
    uint32_t mask = m.input_tensor(ScalarType::Bool, {64});
    uint32_t h = m.input_tensor(ScalarType::Float16, {8});
    uint32_t n = m.int_value(4);
    m.set_inputs({x, ids, mask, h, n}).set_outputs({x});
    MethodBuilder& t = pb.method("tensors");  // the same without the int
    uint32_t tx = t.input_tensor(ScalarType::Float32, {4, 3}, true);
    uint32_t tids = t.input_tensor(ScalarType::Int64, {64});
    uint32_t tmask = t.input_tensor(ScalarType::Bool, {64});
    uint32_t th = t.input_tensor(ScalarType::Float16, {8});
    t.set_inputs({tx, tids, tmask, th}).set_outputs({tx});
    pte_ = pb.build();
    loader_.reset(new BufferDataLoader(pte_.data(), pte_.size()));
    Result<Program> p = Program::load(loader_.get(), Program::Verification::Full, &diag_);
    ASSERT_TRUE(p.ok()) << diag_.text();
    program_.reset(new Program(std::move(*p)));
  }
  MethodMeta meta(const char* name) { return *program_->method_meta(name); }

  PteBytes pte_;
  std::unique_ptr<BufferDataLoader> loader_;
  std::unique_ptr<Program> program_;
  Diagnostic diag_;
};

TEST_F(CommandUtilTest, DescribeInputsGivesDtypeShapeAndDynamicBounds) {
  EXPECT_EQ(tools::describe_inputs(meta("forward")),
            "  input 0: float32[<=4, <=3] (dynamic, up to these sizes)\n"
            "  input 1: int64[64]\n"
            "  input 2: bool[64]\n"
            "  input 3: float16[8]\n"
            "  input 4: int (not a tensor)\n");
}

TEST_F(CommandUtilTest, ZerosAreZeroAtTheUpperBoundSizes) {
  Expected<std::vector<TensorPtr>> in = tools::synthetic_inputs(meta("tensors"), SyntheticInputs::kZeros, 3);
  ASSERT_TRUE(in.ok()) << in.error().to_string();
  ASSERT_EQ(in->size(), 4u);
  EXPECT_EQ(in->at(0).sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(in->at(1).dtype(), ScalarType::Int64);
  EXPECT_EQ(in->at(3).dtype(), ScalarType::Float16);
  for (const TensorPtr& t : *in) {
    for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(element_as_double(t.tensor(), i), 0.0);
  }
  // A non-tensor input cannot be made up.
  Expected<std::vector<TensorPtr>> scalar = tools::synthetic_inputs(meta("forward"), SyntheticInputs::kZeros, 0);
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.error().message().find("input 4 is not a tensor"), std::string::npos);
}

TEST_F(CommandUtilTest, RandomIsDeterministicAndInRangePerDtype) {
  auto a = tools::synthetic_inputs(meta("tensors"), SyntheticInputs::kRandom, 0);
  auto b = tools::synthetic_inputs(meta("tensors"), SyntheticInputs::kRandom, 0);
  auto c = tools::synthetic_inputs(meta("tensors"), SyntheticInputs::kRandom, 1);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool differs_by_seed = false;
  for (size_t k = 0; k < a->size(); ++k) {
    const Tensor& ta = a->at(k).tensor();
    ASSERT_EQ(ta.nbytes(), b->at(k).tensor().nbytes());
    EXPECT_EQ(std::memcmp(ta.data, b->at(k).tensor().data, ta.nbytes()), 0) << "input " << k;
    differs_by_seed = differs_by_seed || std::memcmp(ta.data, c->at(k).tensor().data, ta.nbytes()) != 0;
  }
  EXPECT_TRUE(differs_by_seed);

  // Floats in [-1, 1), both signs; integers in [0, 10), several values; bools both.
  for (int k : {0, 3}) {
    const Tensor& t = a->at(k).tensor();
    double lo = 1, hi = -1;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = element_as_double(t, i);
      EXPECT_GE(v, -1.0);
      EXPECT_LE(v, 1.0);  // fp16 rounding may reach 1
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_LT(lo, 0.0) << "input " << k;
    EXPECT_GT(hi, 0.0) << "input " << k;
  }
  std::vector<int> seen(10, 0);
  for (int64_t i = 0; i < 64; ++i) {
    const double v = element_as_double(a->at(1).tensor(), i);
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 10.0);
    ASSERT_EQ(v, static_cast<int64_t>(v));
    seen[static_cast<int>(v)]++;
  }
  EXPECT_GE(std::count_if(seen.begin(), seen.end(), [](int s) { return s > 0; }), 5);
  int trues = 0;
  for (int64_t i = 0; i < 64; ++i) trues += element_as_double(a->at(2).tensor(), i) != 0.0;
  EXPECT_GT(trues, 0);
  EXPECT_LT(trues, 64);
}

std::string stream_output(const std::vector<std::string>& pieces) {
  FILE* f = std::tmpfile();
  if (f == nullptr) return "<no tmpfile>";
  tools::TextStream out(f);
  for (const std::string& p : pieces) out.write(p);
  out.finish();
  std::rewind(f);
  std::string s;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

TEST(TextStreamTest, EndsTheLineExactlyOnce) {
  EXPECT_EQ(stream_output({"The best way to", " go"}), "The best way to go\n");
  EXPECT_EQ(stream_output({"one line\n"}), "one line\n");          // not doubled
  EXPECT_EQ(stream_output({"ends\n", ""}), "ends\n");               // an empty piece changes nothing
  EXPECT_EQ(stream_output({"a\n", "b"}), "a\nb\n");
  EXPECT_EQ(stream_output({}), "");                                 // nothing streamed (--quiet)
  EXPECT_EQ(stream_output({"1 ", "2 "}), "1 2 \n");                 // token ids
}

}  // namespace
}  // namespace ember
