// Whether the linked kernel library is a selective build (only the operators some programs
// need, see runtime/kernel/selective_registration.h), so that a method needing another
// operator can say "not in this build" and how to rebuild, instead of "link the kernels".
#pragma once

namespace ember {

// Called once by a selective kernel library from a static initialiser. `description` is a
// static string naming where the selection came from (e.g. "operators of model.pte").
// Returns true so it can initialise a static.
bool note_kernel_selection(const char* description);
// The description of the linked selective kernel library, or null for a full one.
const char* kernel_selection();

}  // namespace ember
