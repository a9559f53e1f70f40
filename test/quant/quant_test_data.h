// The quantization tests' data: files of the repository (examples/models/fashion_cnn*.pt2,
// test/quant/data/*.npy) found through Bazel's runfiles, and .npy loading that fails the
// test with the reader's message.
#pragma once

#include <cstdlib>
#include <string>

#include "exporter/util/npy.h"
#include "gtest/gtest.h"

namespace ember {
namespace testing {

// A repository-relative path as the test sees it (runfiles under Bazel, else as given).
inline std::string repo_path(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return std::string(srcdir) + "/" + ws + "/" + rel;
  return rel;
}

inline exporter::NpyArray load_repo_npy(const std::string& rel) {
  auto a = exporter::read_npy(repo_path(rel));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : exporter::NpyArray();
}

}  // namespace testing
}  // namespace ember
