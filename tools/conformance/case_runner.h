// Runs one conformance case in one form, in this process: exports the archive in memory
// with the exporter (portable kernels must be linked), loads the program with the runtime
// (ember::Module over the in-memory bytes), feeds input_<i>.npy, executes once and compares
// every user output with output_<i>.npy (tools/conformance/output_compare.h).
//
// A kernel that crashes takes the process with it: use run_isolated()
// (tools/conformance/isolated_runner.h) to survive any case.
#pragma once

#include <string>

#include "tools/conformance/case_info.h"
#include "tools/conformance/output_compare.h"

namespace ember {
namespace conformance {

enum class Outcome {
  Pass,         // exported, ran, every output matched
  Fail,         // wrong values/shape/dtype, a load or runtime error, a crash or a timeout
  Unsupported,  // the exporter refused the archive (e.g. an op without a kernel)
};
const char* outcome_name(Outcome outcome);  // "PASS" / "FAIL" / "UNSUPPORTED"

struct CaseResult {
  std::string name;  // case directory name
  Form form = Form::Model;
  Outcome outcome = Outcome::Fail;
  // Why it did not pass (one line); for a PASS of a random-valued case a note that only
  // shapes and dtypes were checked.
  std::string reason;
};

struct RunOptions {
  Tolerance tolerance;
  size_t temp_allocator_bytes = 64 << 20;  // kernel scratch
};

CaseResult run_case(const CaseInfo& info, Form form, const RunOptions& options = RunOptions());

}  // namespace conformance
}  // namespace ember
