// Conformance results as text: per-form summaries, the one-line-per-case listing of
// `ember conformance`, and docs/op-coverage.md (written by `--markdown`, read back by
// //test/conformance:opcases_test to check that every case that does not pass is listed).
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tools/conformance/case_runner.h"

namespace ember {
namespace conformance {

struct FormSummary {
  Form form = Form::Model;
  size_t cases = 0, pass = 0, fail = 0, unsupported = 0;
  double pass_percent() const { return cases == 0 ? 0.0 : 100.0 * static_cast<double>(pass) / cases; }
};

// One summary per form present in `results`, model first.
std::vector<FormSummary> summarize(const std::vector<CaseResult>& results);

// "PASS         abs__0  core  " + reason.
std::string result_line(const CaseResult& r);
// "model: 480/504 PASS (95.2%), 10 FAIL, 14 UNSUPPORTED".
std::string summary_line(const FormSummary& s);

// The whole docs/op-coverage.md: a summary table and one row per case+form that does not
// pass (case, form, status, reason). `command` is how it was generated.
std::string coverage_markdown(const std::vector<CaseResult>& results, const std::string& command);

// (case, form) pairs listed as not passing in a document written by coverage_markdown().
std::set<std::pair<std::string, std::string>> parse_coverage_markdown(const std::string& markdown);

}  // namespace conformance
}  // namespace ember
