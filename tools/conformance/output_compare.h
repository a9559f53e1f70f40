// Compares one output of a method with the expected (eager PyTorch) array.
//
// Rules: shapes and dtypes must be equal; integer and bool elements exactly equal; floating
// elements allclose: |got - want| <= atol + rtol * |want|, NaN exactly where NaN is expected,
// +-inf exactly where it is expected. `values = false` checks shape and dtype only (outputs
// of random-valued ops).
#pragma once

#include <string>

#include "runtime/core/tensor.h"

namespace ember {
namespace conformance {

struct Tolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
};

// "" when `got` matches `want`, else a one-line description of the first difference:
// "shape [2, 3] expected [3, 2]", "dtype int32 expected int64",
// "3 of 12 elements differ; max abs err 0.5 (rel 0.25) at [1, 2]: got 2.5 expected 2".
std::string compare_output(const Tensor& got, const Tensor& want, bool values, const Tolerance& tolerance);

// "[2, 3]".
std::string shape_text(const Tensor& t);

}  // namespace conformance
}  // namespace ember
