// Loading Qualcomm's QNN HTP library (libQnnHtp.so) and opening one backend + device on it.
//
// Where the library comes from, in order:
//   1. an explicit path (the exporter's `--backend-option qnn.library=PATH`, or
//      set_library_path() before the first program loads);
//   2. the environment variable EMBER_QNN_LIBRARY (a path to libQnnHtp.so);
//   3. the per-user cache that ./setup.sh fills from the pinned onnxruntime-qnn wheel:
//      ${XDG_CACHE_HOME:-$HOME/.cache}/ember/qnn/onnxruntime_qnn/libQnnHtp.so.
// On x86-64 that library runs the HTP as Qualcomm's simulator; on a Snapdragon phone it is the
// device's own libQnnHtp.so (with its skel library beside it) and the same code drives the NPU.
//
// The provider's core API version is checked before any other call: major 2, minor at least
// kCoreApiMinMinor (qnn_api.h); anything else is refused with a message naming both versions.
//
// Lifetime and threading: the library, its log, backend and device are opened once per process
// on the first successful get() and stay open until exit (QNN contexts made from them may be
// used by several methods). get() is thread-safe; the returned object is immutable.
#pragma once

#include <string>

#include "delegates/qnn/qnn_api.h"

namespace ember {
namespace qnn {

class QnnLibrary {
 public:
  // The process's library, opened on first use. On failure returns null and sets *error to a
  // message that says what to do (install it with ./setup.sh, or point EMBER_QNN_LIBRARY at
  // it). A failure is remembered: later calls return the same message.
  static const QnnLibrary* get(std::string* error);

  // Sets the path tried first; only effective before the first get().
  static void set_library_path(const std::string& path);
  // The path get() would try first (explicit, environment, cache), for messages.
  static std::string default_path();

  const FunctionTable& api() const { return *api_; }
  BackendHandle backend() const { return backend_; }
  DeviceHandle device() const { return device_; }
  LogHandle log() const { return log_; }
  const std::string& path() const { return path_; }
  const ApiVersion& api_version() const { return version_; }
  const std::string& build_id() const { return build_id_; }
  const std::string& provider() const { return provider_; }

  // "QNN error 1002: <the library's message>" for a non-zero error handle.
  std::string message(ErrorHandle error) const;

 private:
  QnnLibrary() = default;
  const FunctionTable* api_ = nullptr;
  void* dl_ = nullptr;
  LogHandle log_ = nullptr;
  BackendHandle backend_ = nullptr;
  DeviceHandle device_ = nullptr;
  std::string path_, build_id_, provider_;
  ApiVersion version_{};

  static const QnnLibrary* open(const std::string& path, std::string* error);
};

// How to install the library, for error messages.
constexpr const char* kInstallHint =
    "run ./setup.sh (it installs Qualcomm's HTP simulator library from the pinned onnxruntime-qnn "
    "wheel into ~/.cache/ember/qnn), or set EMBER_QNN_LIBRARY to a libQnnHtp.so";

}  // namespace qnn
}  // namespace ember
