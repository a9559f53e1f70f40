// Numerical debugging (`ember debug`): which operator of a delegated program first goes
// wrong, and by how much every operator differs from the portable kernels.
//
// How: the .pt2 is exported twice with the same passes, once with every node on the
// portable kernels (the reference) and once with the backend under test taking each node
// it supports as a delegate call of its own (PerOperatorPartitioner), so every delegated
// operator's output is a program value. Both programs run on the same inputs with a
// tracer that copies each kernel/delegate call's outputs as they are written. Outputs are
// matched by .pt2 node name (the program's debug table) and compared: relative L2
// (||got - ref|| / ||ref||) and max |got - ref|.
//
// An operator's error includes what its inputs brought from earlier operators (each program
// runs on its own values): the first operator past the tolerance is where the error starts;
// later ones may only inherit it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/partition/partitioner.h"
#include "extension/module/tensor_ptr.h"

namespace ember {
namespace tools {

struct NumericalDebugOptions {
  std::string method = "forward";
  // An operator differs when BOTH relative L2 > rel_tolerance and max abs > abs_tolerance
  // (the abs floor keeps outputs near zero from being flagged for rounding noise).
  double rel_tolerance = 1e-3;
  double abs_tolerance = 1e-4;
};

// One delegated operator's output against the reference.
struct OperatorError {
  int instruction = 0;   // in the delegated program
  std::string node;      // .pt2 node name
  std::string source;    // "file:line in fn" when the .pt2 had stack traces
  std::string op;        // ATen operator of the node in the reference program
  bool delegated = false;  // ran in the backend (else on the portable kernels in both)
  size_t output = 0;     // which output of the node
  int64_t numel = 0;
  double rel_l2 = 0;     // ||got - ref|| / ||ref|| (||got - ref|| when ref is all zeros)
  double max_abs = 0;
  bool exceeds = false;  // past both tolerances, or shape/dtype/NaN mismatch
  std::string mismatch;  // "" or why values could not be compared ("shape [2] vs [3]")
};

struct NumericalDebugReport {
  std::string backend;
  std::vector<OperatorError> operators;  // execution order of the delegated program
  int first_exceeding = -1;              // index into operators; -1 when none
  int largest_delegated = -1;            // delegated operator with the largest rel_l2
  int delegated_nodes = 0;               // nodes the backend ran (one call each)
  int skipped_nodes = 0;                 // claimed but not compilable alone: left portable
  int unmatched = 0;                     // delegated-program values with no reference twin
  std::vector<double> output_rel_l2;     // the method's outputs
};

// Exports `pt2_path` twice (see above) and compares. `backend` is the partitioner under
// test (XNNPACK, Vulkan or a test backend). `inputs` must match the method's inputs; when
// empty they are generated as `ember bench` does (float uniform [0, 1), integers in [0, 2)).
absl::StatusOr<NumericalDebugReport> debug_numerics(const std::string& pt2_path,
                                                    std::shared_ptr<exporter::Partitioner> backend,
                                                    const std::vector<TensorPtr>& inputs,
                                                    const NumericalDebugOptions& options);

// The report as text: a header, the first operator past the tolerance (or "none"), the
// largest delegated error, and with `all` one row per compared output.
std::string format_report(const NumericalDebugReport& report, const NumericalDebugOptions& options, bool all);

}  // namespace tools
}  // namespace ember
