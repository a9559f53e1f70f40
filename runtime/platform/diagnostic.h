// Diagnostic: an optional, caller-owned buffer that receives the message explaining the
// most recent failure of a load/init/execute call (what failed and what to do about it).
// Fixed size, no heap. Not thread-safe: use one per thread.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "runtime/core/error.h"

namespace ember {

struct Diagnostic {
  char message[384] = {0};
  const char* text() const { return message; }
};

// Formats the message into `diag` (when non-null), logs it at Debug level (callers decide
// whether to surface it; EMBER_MIN_LOG_LEVEL=0 shows every failure), and returns `error`.
Error fail(Diagnostic* diag, Error error, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace ember
