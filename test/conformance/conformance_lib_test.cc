// Unit tests of the conformance library: output comparison rules, random-op detection and
// the coverage document round trip.
#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "runtime/module/tensor_ptr.h"
#include "tools/conformance/case_info.h"
#include "tools/conformance/coverage_report.h"
#include "tools/conformance/output_compare.h"

namespace ember {
namespace conformance {
namespace {

TEST(CompareOutput, FloatsAllclose) {
  Tolerance tol;
  TensorPtr want = make_tensor(std::vector<float>{1.0f, 100.0f, 0.0f}, {3});
  TensorPtr close = make_tensor(std::vector<float>{1.000005f, 100.009f, 0.000009f}, {3});
  TensorPtr far = make_tensor(std::vector<float>{1.0f, 100.02f, 0.0f}, {3});
  EXPECT_EQ(compare_output(close.tensor(), want.tensor(), true, tol), "");
  std::string why = compare_output(far.tensor(), want.tensor(), true, tol);
  EXPECT_NE(why.find("1 of 3 elements differ"), std::string::npos) << why;
  EXPECT_NE(why.find("at [1]"), std::string::npos) << why;
}

TEST(CompareOutput, NanAndInfMustMatchExactly) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tolerance tol;
  TensorPtr want = make_tensor(std::vector<float>{nan, inf, -inf}, {3});
  TensorPtr same = make_tensor(std::vector<float>{nan, inf, -inf}, {3});
  TensorPtr swapped = make_tensor(std::vector<float>{0.0f, inf, inf}, {3});
  EXPECT_EQ(compare_output(same.tensor(), want.tensor(), true, tol), "");
  EXPECT_NE(compare_output(swapped.tensor(), want.tensor(), true, tol).find("2 of 3"), std::string::npos);
}

TEST(CompareOutput, IntegersExactShapeAndDtype) {
  Tolerance tol;
  TensorPtr want = make_tensor(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  TensorPtr off = make_tensor(std::vector<int64_t>{1, 2, 3, 5}, {2, 2});
  TensorPtr flat = make_tensor(std::vector<int64_t>{1, 2, 3, 4}, {4});
  TensorPtr floats = make_tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  EXPECT_NE(compare_output(off.tensor(), want.tensor(), true, tol).find("at [1, 1]: got 5 expected 4"),
            std::string::npos);
  EXPECT_EQ(compare_output(flat.tensor(), want.tensor(), true, tol), "shape [4] expected [2, 2]");
  EXPECT_EQ(compare_output(floats.tensor(), want.tensor(), true, tol), "dtype float32 expected int64");
  // Shape/dtype only (random-valued ops).
  EXPECT_EQ(compare_output(off.tensor(), want.tensor(), false, tol), "");
}

TEST(CaseInfo, RandomValuedOps) {
  EXPECT_TRUE(is_random_valued_op("aten.bernoulli.default"));
  EXPECT_TRUE(is_random_valued_op("aten.uniform_.default"));
  EXPECT_TRUE(is_random_valued_op("aten.randn_like.default"));
  EXPECT_TRUE(is_random_valued_op("aten.new_empty.default"));
  EXPECT_FALSE(is_random_valued_op("aten.add.Tensor"));
  EXPECT_FALSE(is_random_valued_op("aten.dropout.default"));  // random only in training
}

TEST(CoverageReport, MarkdownListsEveryCaseThatDoesNotPass) {
  std::vector<CaseResult> results = {
      {"abs__0", Form::Model, Outcome::Pass, ""},
      {"split__0", Form::Core, Outcome::Fail, "execute: a | b"},
      {"stft__0", Form::Model, Outcome::Unsupported, "no kernel\nfor stft"},
  };
  std::string md = coverage_markdown(results, "ember conformance");
  auto listed = parse_coverage_markdown(md);
  EXPECT_EQ(listed.size(), 2u);
  EXPECT_TRUE(listed.count({"split__0", "core"}));
  EXPECT_TRUE(listed.count({"stft__0", "model"}));
  EXPECT_FALSE(listed.count({"abs__0", "model"}));
  auto summaries = summarize(results);
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summary_line(summaries[0]), "model: 1/2 PASS (50.0%), 0 FAIL, 1 UNSUPPORTED");
}

}  // namespace
}  // namespace conformance
}  // namespace ember
