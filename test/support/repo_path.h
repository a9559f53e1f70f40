// Files of the repository as a test sees them: through Bazel's runfiles (declare them in the
// test's `data`), else relative to the working directory.
#pragma once

#include <cstdlib>
#include <string>

namespace ember {
namespace testing {

inline std::string repo_path(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/" + rel;
  return rel;
}

}  // namespace testing
}  // namespace ember
