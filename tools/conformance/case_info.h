// One operator conformance case (`<opcases>/<op>__<k>/`, see ../shared/README.md): its
// case.json metadata and the files the conformance runner uses.
//
// A case directory holds model.pt2 (training IR), core.pt2 (core ATen IR), input_<i>.npy,
// output_<i>.npy (eager PyTorch results) and case.json:
//   {"op": "abs", "variant": "", "ops": ["aten.abs.default"], "core_aten_ops": [...],
//    "input_dtypes": [...], "output_dtypes": [...], "nondeterministic": false, ...}
#pragma once

#include <string>
#include <vector>

namespace ember {
namespace conformance {

// Which archive of a case is exported.
enum class Form { Model, Core };
const char* form_name(Form form);  // "model" / "core"
// The archive file of `form` in a case directory: "model.pt2" / "core.pt2".
const char* form_file(Form form);

struct CaseInfo {
  std::string name;  // directory name, e.g. "abs__0"
  std::string dir;   // full path
  std::string op;    // case.json "op"
  std::string variant;  // case.json "variant" (OpInfo variant_test_name, may be "")
  std::vector<std::string> aten_ops;       // both graphs, e.g. "aten.bernoulli.default"
  // The outputs are random or uninitialised (bernoulli, dropout, empty_like, ...), so only
  // their shapes and dtypes can be checked. `random_reason` names the op that decided it.
  bool random_values = false;
  std::string random_reason;
};

// Reads `<dir>/case.json`. Returns "" on success, else why it could not be read.
std::string read_case_info(const std::string& dir, CaseInfo* info);

// True for an ATen op (as "aten.<op>.<overload>" or "<op>") whose results are random or
// undefined (sampling ops, dropout variants, empty*/new_empty*, ...).
bool is_random_valued_op(const std::string& aten_op);

// Case directories under `root`, sorted by name: `root` itself when it holds a case.json,
// else its subdirectories that do. Only names containing `filter` (when non-empty).
std::vector<std::string> list_case_dirs(const std::string& root, const std::string& filter);

}  // namespace conformance
}  // namespace ember
