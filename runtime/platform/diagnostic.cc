#include "runtime/platform/diagnostic.h"

#include "runtime/platform/log.h"

namespace ember {

Error fail(Diagnostic* diag, Error error, const char* format, ...) {
  char local[384];
  char* buffer = diag != nullptr ? diag->message : local;
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(local), format, args);
  va_end(args);
  EMBER_LOG(Debug, "%s: %s", error_name(error), buffer);
  return error;
}

}  // namespace ember
