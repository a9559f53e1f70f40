// Error codes returned by every fallible runtime call. No exceptions: callers check values.
#pragma once

#include <cstdint>

namespace ember {

enum class Error : uint8_t {
  Ok = 0,
  InvalidArgument,    // a caller passed something unusable (wrong dtype, rank, null pointer)
  InvalidProgram,     // the .pte bytes are malformed or inconsistent
  VersionMismatch,    // the .pte was written for a newer runtime
  NotFound,           // a named method, input or backend does not exist
  NotSupported,       // a kernel or backend is missing or the feature is not built in
  OutOfMemory,        // a caller-provided allocator or arena is too small
  OutOfBounds,        // a size exceeds a planned bound
  AccessFailed,       // a file could not be opened, read or mapped
  InvalidState,       // call order violated (e.g. execute before init)
  BackendFailed,      // a delegate reported a failure
  Internal,           // an invariant broke; a bug in Ember
};

// A stable, human-readable name ("InvalidProgram"); never null.
const char* error_name(Error error);

}  // namespace ember

// Propagates a non-Ok Error from the current function.
#define EMBER_TRY(expr)                          \
  do {                                           \
    ::ember::Error ember_try_err_ = (expr);      \
    if (ember_try_err_ != ::ember::Error::Ok) {  \
      return ember_try_err_;                     \
    }                                            \
  } while (0)
