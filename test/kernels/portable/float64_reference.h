// Loads a float64 reference array (.npy, written by the generators in tools/kernels/) into a
// TestTensor: the kernels' double-precision tests compare against PyTorch's float64 results.
#pragma once

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "extension/npy/npy_format.h"
#include "test/kernels/portable/kernel_runner.h"

namespace ember {
namespace testing {

// The array at `path`, or null after a test failure naming the file and what is wrong.
inline std::unique_ptr<TestTensor> load_float64_reference(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    ADD_FAILURE() << "cannot open " << path;
    return nullptr;
  }
  std::vector<uint8_t> bytes;
  uint8_t buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.insert(bytes.end(), buf, buf + got);
  std::fclose(f);
  npy::Header h;
  std::string why = npy::parse_header(bytes.data(), bytes.size(), 8, &h);
  if (!why.empty() || h.dtype != ScalarType::Float64) {
    ADD_FAILURE() << path << ": " << (why.empty() ? "expected float64" : why);
    return nullptr;
  }
  auto t = std::make_unique<TestTensor>(ScalarType::Float64, h.shape);
  std::memcpy(t->data<double>(), bytes.data() + h.data_offset, h.data_bytes);
  return t;
}

}  // namespace testing
}  // namespace ember
