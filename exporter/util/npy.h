// .npy arrays on the host: float16/32/64, int8/16/32/64, uint8, bool, little-endian, C order,
// format versions 1-3 (the format itself is extension/npy/npy_format.h, shared with Module).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/scalar_type.h"

namespace ember {
namespace exporter {

struct NpyArray {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data.data()); }
  // Element i converted to double.
  double at(int64_t i) const;
};

absl::StatusOr<NpyArray> read_npy(const std::string& path);
absl::StatusOr<NpyArray> parse_npy(const std::vector<uint8_t>& bytes, const std::string& what);
absl::Status write_npy(const std::string& path, const NpyArray& array);

}  // namespace exporter
}  // namespace ember
