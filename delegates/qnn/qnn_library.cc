#include "delegates/qnn/qnn_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace ember {
namespace qnn {
namespace {

std::mutex g_mutex;
std::string* g_explicit_path = nullptr;  // leaked on purpose: process lifetime
const QnnLibrary* g_library = nullptr;
std::string* g_error = nullptr;

// QNN's log lines at error level go to stderr with a prefix; the library logs one harmless
// "unexpected GraphHtpSettings option" error per graph on the simulator, which EMBER_QNN_LOG=0
// silences. Higher levels are shown only with EMBER_QNN_LOG=<level>.
int log_level() {
  const char* s = std::getenv("EMBER_QNN_LOG");
  return s == nullptr ? 0 : std::atoi(s);
}
void log_callback(const char* fmt, int level, uint64_t, va_list args) {
  if (level > log_level()) return;
  std::fprintf(stderr, "[qnn] ");
  std::vfprintf(stderr, fmt, args);
  std::fprintf(stderr, "\n");
}

std::string version_string(const Version& v) {
  return std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
}

}  // namespace

void QnnLibrary::set_library_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_explicit_path == nullptr) g_explicit_path = new std::string();
  *g_explicit_path = path;
}

std::string QnnLibrary::default_path() {
  if (g_explicit_path != nullptr && !g_explicit_path->empty()) return *g_explicit_path;
  if (const char* env = std::getenv("EMBER_QNN_LIBRARY"); env != nullptr && *env != '\0') return env;
  std::string cache;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    cache = xdg;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    cache = std::string(home) + "/.cache";
  } else {
    return "libQnnHtp.so";
  }
  return cache + "/ember/qnn/onnxruntime_qnn/libQnnHtp.so";
}

const QnnLibrary* QnnLibrary::get(std::string* error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_library != nullptr) return g_library;
  if (g_error == nullptr) {
    std::string e;
    g_library = open(default_path(), &e);
    if (g_library == nullptr) g_error = new std::string(std::move(e));
  }
  if (g_library == nullptr && error != nullptr) *error = *g_error;
  return g_library;
}

const QnnLibrary* QnnLibrary::open(const std::string& path, std::string* error) {
  void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    const char* why = dlerror();
    *error = "qnn: cannot load the QNN HTP library " + path + " (" + (why ? why : "?") + "); " + kInstallHint;
    return nullptr;
  }
  auto get_providers = reinterpret_cast<GetProvidersFn>(dlsym(dl, kGetProvidersSymbol));
  if (get_providers == nullptr) {
    *error = "qnn: " + path + " is not a QNN backend library (no " + kGetProvidersSymbol + ")";
    dlclose(dl);
    return nullptr;
  }
  const Interface** providers = nullptr;
  uint32_t count = 0;
  if (get_providers(&providers, &count) != 0 || providers == nullptr || count == 0) {
    *error = "qnn: " + path + " lists no QNN providers";
    dlclose(dl);
    return nullptr;
  }
  const Interface* chosen = nullptr;
  for (uint32_t i = 0; i < count; ++i) {
    if (providers[i] != nullptr && providers[i]->backend_id == kHtpBackendId) chosen = providers[i];
  }
  if (chosen == nullptr) {
    *error = "qnn: " + path + " has no HTP provider (backend id 6); use libQnnHtp.so";
    dlclose(dl);
    return nullptr;
  }
  const Version& core = chosen->api_version.core_api;
  if (core.major != kCoreApiMajor || core.minor < kCoreApiMinMinor) {
    *error = "qnn: " + path + " implements QNN core API " + version_string(core) + "; Ember needs " +
             std::to_string(kCoreApiMajor) + "." + std::to_string(kCoreApiMinMinor) +
             " or a later 2.x (install the pinned library with ./setup.sh)";
    dlclose(dl);
    return nullptr;
  }
  auto* lib = new QnnLibrary();  // process lifetime (see the header)
  lib->dl_ = dl;
  lib->api_ = &chosen->functions;
  lib->path_ = path;
  lib->version_ = chosen->api_version;
  lib->provider_ = chosen->provider_name ? chosen->provider_name : "";
  const char* build = nullptr;
  if (lib->api_->backend_get_build_id != nullptr && lib->api_->backend_get_build_id(&build) == 0 && build) {
    lib->build_id_ = build;
  }
  const FunctionTable& q = *lib->api_;
  ErrorHandle e = q.log_create(log_callback, 5, &lib->log_);
  if (e == 0) e = q.backend_create(lib->log_, nullptr, &lib->backend_);
  if (e == 0 && q.device_create != nullptr) {
    // Not every backend has devices; the HTP simulator does. A failure here is not fatal.
    if (q.device_create(lib->log_, nullptr, &lib->device_) != 0) lib->device_ = nullptr;
  }
  if (e != 0) {
    *error = "qnn: " + path + ": creating the backend failed: " + lib->message(e);
    return nullptr;  // the half-open library stays loaded; QNN gives no safe way back
  }
  return lib;
}

std::string QnnLibrary::message(ErrorHandle error) const {
  const char* text = nullptr;
  if (api_ != nullptr && api_->error_get_message != nullptr) api_->error_get_message(error, &text);
  return "QNN error " + std::to_string(error) + (text != nullptr ? std::string(": ") + text : std::string());
}

}  // namespace qnn
}  // namespace ember
