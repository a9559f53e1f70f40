#include "runtime/core/error.h"

namespace ember {

const char* error_name(Error error) {
  switch (error) {
    case Error::Ok: return "Ok";
    case Error::InvalidArgument: return "InvalidArgument";
    case Error::InvalidProgram: return "InvalidProgram";
    case Error::VersionMismatch: return "VersionMismatch";
    case Error::NotFound: return "NotFound";
    case Error::NotSupported: return "NotSupported";
    case Error::OutOfMemory: return "OutOfMemory";
    case Error::OutOfBounds: return "OutOfBounds";
    case Error::AccessFailed: return "AccessFailed";
    case Error::InvalidState: return "InvalidState";
    case Error::BackendFailed: return "BackendFailed";
    case Error::Internal: return "Internal";
  }
  return "Unknown";
}

}  // namespace ember
