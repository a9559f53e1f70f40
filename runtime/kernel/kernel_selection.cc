#include "runtime/kernel/kernel_selection.h"

namespace ember {
namespace {

// Constant-initialised (no constructor), so it is set before or after any other static
// initialiser without an ordering problem.
const char* g_selection = nullptr;

}  // namespace

bool note_kernel_selection(const char* description) {
  g_selection = description != nullptr ? description : "a selective build";
  return true;
}

const char* kernel_selection() { return g_selection; }

}  // namespace ember
