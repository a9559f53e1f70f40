// Locates the shared data folder (`shared/` beside the checkout) from a test:
// $EMBER_SHARED_DIR, else by resolving this package's BUILD runfile (a symlink into the
// source tree) and walking up to a directory with a `shared/models` sibling.
#pragma once

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>

namespace ember {
namespace testing {

inline bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// "" when not found (tests then GTEST_SKIP).
inline std::string shared_dir() {
  if (const char* env = getenv("EMBER_SHARED_DIR")) {
    if (is_dir(std::string(env) + "/models")) return env;
  }
  std::string start;
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* ws = getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) {
    std::string runfile = std::string(srcdir) + "/" + ws + "/test/exporter/BUILD";
    char buf[PATH_MAX];
    if (realpath(runfile.c_str(), buf) != nullptr) start = buf;
  }
  if (start.empty()) {
    char buf[PATH_MAX];
    if (realpath(".", buf) != nullptr) start = buf;
  }
  while (!start.empty()) {
    size_t slash = start.find_last_of('/');
    if (slash == std::string::npos) break;
    start = start.substr(0, slash);
    std::string candidate = (start.empty() ? "" : start) + "/shared";
    if (is_dir(candidate + "/models")) return candidate;
  }
  return "";
}

}  // namespace testing
}  // namespace ember
