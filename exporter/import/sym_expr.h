// A tiny evaluator for the sympy expression strings torch.export writes for symbolic sizes
// ("s27", "Symbol('s27', positive=True, integer=True)", "2*s27", "s27 + 8", "Max(1, s0)",
// "FloorDiv(s0, 2)", "(s0//2)", "CeilToInt(...)"), used to compute upper bounds: each symbol
// is replaced by a value (its range max). Integer arithmetic.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace ember {
namespace exporter {

absl::StatusOr<int64_t> evaluate_sym_expr(const std::string& expr,
                                          const std::map<std::string, int64_t>& symbols);

}  // namespace exporter
}  // namespace ember
