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

// Image `i` of a [N, 1, 28, 28] float32 batch (test/quant/data/images.npy) as a [1, 1, 28, 28]
// input.
inline exporter::NpyArray fashion_image(const exporter::NpyArray& images, int64_t i) {
  constexpr int64_t kBytes = 28 * 28 * 4;
  exporter::NpyArray x;
  x.dtype = ScalarType::Float32;
  x.shape = {1, 1, 28, 28};
  const uint8_t* src = images.data.data() + i * kBytes;
  x.data.assign(src, src + kBytes);
  return x;
}

}  // namespace testing
}  // namespace ember
