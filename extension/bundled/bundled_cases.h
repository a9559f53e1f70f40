// Bundled test cases (`ember export --bundle`, schema Program.bundled_cases): the semantic
// checks of the cases. The core never reads Program.bundled_cases (the FlatBuffer verifier
// only bounds it), so Program::load does not validate them; whatever runs the cases
// (Module::verify_bundled_cases, `ember verify`) calls this first.
//
// Allocation-free, no exceptions. Thread-safety: reads the immutable Program only.
#pragma once

#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"
#include "runtime/program/program.h"

namespace ember {

// Ok when every case names a method of `program` and gives it one tensor per input and
// expected output, each with a known dtype, sane sizes and exactly numel * element size
// bytes; else InvalidProgram with the reason in `diag` ("bundled case C input K ...").
Error validate_bundled_cases(const Program& program, Diagnostic* diag);

}  // namespace ember
