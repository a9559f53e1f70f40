// Bundled programs (`ember export --bundle DIR`): test cases read from directories of .npy
// files, expected outputs computed with the portable kernels when a directory has none.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "exporter/exporter.h"

namespace ember {
namespace tools {

// DIR/input_0.npy, input_1.npy, ... (at least one) and, when present, DIR/output_0.npy, ...
// The case is named after the directory's last component.
absl::StatusOr<exporter::BundledCaseData> read_bundle_dir(const std::string& dir);

// Fills the expected outputs of every case that has none by running `portable_pte` (the same
// model exported without delegates) on the case's inputs with the portable kernels.
absl::Status compute_expected_outputs(const std::vector<uint8_t>& portable_pte, const std::string& method,
                                      std::vector<exporter::BundledCaseData>* cases);

// Loads `pte` with full verification (bundled cases included), against the data file `ptd`
// when the program keeps its weights in one; the load error otherwise.
absl::Status check_program(const std::vector<uint8_t>& pte, const std::vector<uint8_t>& ptd = {});

}  // namespace tools
}  // namespace ember
