// Kernel availability: every node must have an ATen schema and a registered kernel
// (ember::find_kernel("<ns>::<op>.<overload>")), so an exported program always loads; and
// where a kernel supports only some configurations of its op (an LSTM parameter list of a
// consistent length), the node must use one of them, so the program also runs.
#pragma once

#include "absl/status/status.h"
#include "exporter/ir/graph.h"

namespace ember {
namespace exporter {

// OK, or one error listing EVERY missing op and every unsupported configuration with the
// source location of each node using it.
absl::Status check_kernels(const Graph& g);

}  // namespace exporter
}  // namespace ember
