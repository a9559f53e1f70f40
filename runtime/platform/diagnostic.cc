#include "runtime/platform/diagnostic.h"

#include "runtime/platform/log.h"

namespace ember {

Error fail(Diagnostic* diag, Error error, const char* format, ...) {
  // Without a Diagnostic the message is only logged: not even formatted when this build
  // compiles Debug logging out (EMBER_MIN_LOG_LEVEL above 0, the default).
  constexpr bool kLogged = static_cast<int>(LogLevel::Debug) >= EMBER_MIN_LOG_LEVEL;
  if (diag == nullptr && !kLogged) return error;
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
