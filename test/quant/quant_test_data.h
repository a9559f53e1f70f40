// The quantization tests' data: files of the repository (examples/models/fashion_cnn*.pt2,
// test/quant/data/*.npy) found through Bazel's runfiles, and .npy loading that fails the
// test with the reader's message.
#pragma once

#include <cstdlib>
#include <string>

#include "exporter/util/npy.h"
#include "gtest/gtest.h"
#include "test/support/repo_path.h"

namespace ember {
namespace testing {

inline exporter::NpyArray load_repo_npy(const std::string& rel) {
  auto a = exporter::read_npy(repo_path(rel));
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *a : exporter::NpyArray();
}

}  // namespace testing
}  // namespace ember
