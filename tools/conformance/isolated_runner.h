// Runs conformance cases each in its own forked process, a few at a time, so that a kernel
// that crashes, aborts or hangs fails its case (with the signal and the last line it printed
// to stderr) instead of ending the run.
#pragma once

#include <functional>
#include <vector>

#include "tools/conformance/case_runner.h"

namespace ember {
namespace conformance {

struct CaseJob {
  CaseInfo info;
  Form form = Form::Model;
};

struct IsolationOptions {
  bool isolate = true;           // false: run in this process (for debugging)
  size_t parallel = 2;           // cases at once (isolated only)
  double timeout_seconds = 120;  // a case running longer is killed and FAILs
  RunOptions run;
};

// Results in the order of `jobs`. `on_result`, when set, is called for each result in that
// order as soon as it and every earlier one is known (from the calling thread).
std::vector<CaseResult> run_cases(const std::vector<CaseJob>& jobs, const IsolationOptions& options,
                                  const std::function<void(const CaseResult&)>& on_result = nullptr);

}  // namespace conformance
}  // namespace ember
