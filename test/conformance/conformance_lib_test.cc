// Unit tests of the conformance library: output comparison rules, random-op detection and
// the coverage document round trip.
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>

#include "gtest/gtest.h"
#include "extension/module/tensor_ptr.h"
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

TEST(CoverageReport, RegenerationKeepsTheHandWrittenNotes) {
  std::vector<CaseResult> results = {{"stft__0", Form::Model, Outcome::Unsupported, "no kernel"}};
  std::string md = coverage_markdown(results, "ember conformance");
  EXPECT_EQ(kept_notes(md), "");  // a generated document has no notes
  std::string with_notes = md + "\n## Notes\n\n- stft: needs complex tensors.\n";
  EXPECT_EQ(kept_notes(with_notes), "## Notes\n\n- stft: needs complex tensors.\n");
  // The notes do not disturb the case table's parse.
  EXPECT_EQ(parse_coverage_markdown(with_notes), parse_coverage_markdown(md));
}

// A set from tools/conformance/generate_opinfo_cases.py: summary.json + skipped.json beside
// the cases give one row per OpInfo, including OpInfos without any case.
TEST(CoverageReport, GeneratedSetHasOneRowPerOpInfo) {
  std::string dir = std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/opdb_set";
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/summary.json")
      << R"js({"torch": "2.15.0", "opinfos": 3, "max_samples": 2, "cases": 3,)js"
      << R"js( "per_op": {"abs": {}, "max.binary": {}, "item": {}}})js";
  std::ofstream(dir + "/skipped.json")
      << R"js([{"op": "item", "variant": "", "sample": 0, "reason": "output is not a tensor (float)"},)js"
      << R"js( {"op": "max", "variant": "binary", "sample": 1, "reason": "complex output"}])js";
  GeneratedSet set;
  std::string why;
  ASSERT_TRUE(read_generated_set(dir, &set, &why)) << why;
  EXPECT_EQ(set.opinfos, 3u);
  EXPECT_EQ(set.max_samples, 2u);
  ASSERT_EQ(set.skipped["max.binary"].size(), 1u);
  GeneratedSet none;
  EXPECT_FALSE(read_generated_set(dir + "/absent", &none, &why));
  EXPECT_EQ(why, "");

  std::vector<CaseResult> results = {
      {"abs__0", Form::Model, Outcome::Pass, ""},         {"abs__0", Form::Core, Outcome::Pass, ""},
      {"max__binary__0", Form::Model, Outcome::Pass, ""}, {"max__binary__0", Form::Core, Outcome::Fail, "wrong"},
  };
  std::map<std::string, std::string> opinfo = {{"abs__0", "abs"}, {"max__binary__0", "max.binary"}};
  std::string md = generated_coverage_markdown(results, opinfo, set, "ember conformance /tmp/opdb");
  EXPECT_NE(md.find("| PASS | `abs` | 1 | 1 PASS | 1 PASS | 0 |  |"), std::string::npos) << md;
  EXPECT_NE(md.find("| FAIL | `max.binary` | 1 | 1 PASS | 1 FAIL | 1 | max__binary__0 (core): wrong |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| NOT GENERATED | `item` | 0 | - | - | 1 | not generated: output is not a tensor (float) |"),
            std::string::npos)
      << md;
  // Only the failing-case table is read back (per-OpInfo rows start with their status).
  auto listed = parse_coverage_markdown(md);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed.count({"max__binary__0", "core"}));
}

}  // namespace
}  // namespace conformance
}  // namespace ember
