// Semantic validation of a verified FlatBuffer program: every index, size, offset, enum and
// alignment is checked so that method init and execute can trust them.
#pragma once

#include <cstddef>

#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace schema {
struct Program;
}

// `segment_area_size` is the byte size of the segment area the header declared.
Error validate_program(const schema::Program* program, size_t segment_area_size, Diagnostic* diag);

}  // namespace ember
