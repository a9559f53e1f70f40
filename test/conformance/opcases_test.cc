// Every operator case of ../shared/opcases in both forms (model.pt2, core.pt2), each in its
// own process: no case may crash or hang, the pass rate of each form must reach its floor,
// and every case that does not pass must be listed in docs/op-coverage.md (regenerate it with
// `bazel run //tools:ember -- conformance ../shared/opcases --markdown docs/op-coverage.md`).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"
#include "test/exporter/shared_dir.h"
#include "tools/conformance/case_info.h"
#include "tools/conformance/coverage_report.h"
#include "tools/conformance/isolated_runner.h"

namespace ember {
namespace conformance {
namespace {

// Floors, in percent of cases that PASS. Raise them as kernels land (to the measured rate
// rounded down); never lower them below the measured rate.
constexpr double kMinPassPercentModel = 99;
constexpr double kMinPassPercentCore = 99;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string coverage_doc_path() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/docs/op-coverage.md";
  return "docs/op-coverage.md";
}

TEST(OpCases, NoCrashPassRateAndCoverageDocument) {
  std::string shared = testing::shared_dir();
  if (shared.empty() || !testing::is_dir(shared + "/opcases")) GTEST_SKIP() << "shared/opcases not found";
  std::vector<CaseJob> jobs;
  for (const std::string& dir : list_case_dirs(shared + "/opcases", "")) {
    CaseInfo info;
    std::string err = read_case_info(dir, &info);
    ASSERT_EQ(err, "");
    jobs.push_back({info, Form::Model});
    jobs.push_back({info, Form::Core});
  }
  ASSERT_FALSE(jobs.empty());
  IsolationOptions options;
  options.parallel = std::max(2u, std::thread::hardware_concurrency());
  std::vector<CaseResult> results = run_cases(jobs, options);

  for (const CaseResult& r : results) {
    bool crashed = r.reason.rfind("crashed:", 0) == 0 || r.reason.rfind("timeout:", 0) == 0 ||
                   r.reason.rfind("exited with status", 0) == 0;
    EXPECT_FALSE(crashed) << r.name << " " << form_name(r.form) << ": " << r.reason;
    if (r.outcome != Outcome::Pass) std::printf("%s\n", result_line(r).c_str());
  }
  for (const FormSummary& s : summarize(results)) {
    std::printf("%s\n", summary_line(s).c_str());
    double floor = s.form == Form::Model ? kMinPassPercentModel : kMinPassPercentCore;
    EXPECT_GE(s.pass_percent(), floor) << form_name(s.form) << " pass rate fell below its floor";
  }

  std::string doc = read_text(coverage_doc_path());
  ASSERT_FALSE(doc.empty()) << "cannot read " << coverage_doc_path();
  auto listed = parse_coverage_markdown(doc);
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::Pass) continue;
    EXPECT_TRUE(listed.count({r.name, form_name(r.form)}) != 0)
        << r.name << " (" << form_name(r.form) << ", " << outcome_name(r.outcome)
        << ") is not listed in docs/op-coverage.md; regenerate it with `bazel run //tools:ember -- "
           "conformance ../shared/opcases --markdown docs/op-coverage.md`";
  }
}

}  // namespace
}  // namespace conformance
}  // namespace ember
