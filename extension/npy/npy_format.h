// The .npy format (magic, version, header dict, raw little-endian C-order data) shared by the
// runtime's read_npy/write_npy (extension/module/npy.cc) and the exporter's NpyArray
// (exporter/util/npy.cc). No exceptions: errors are returned as text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/scalar_type.h"

namespace ember {
namespace npy {

// The .npy descr of `dtype` ("<f4", "|u1", ...); nullptr when it has none here.
const char* descr_of(ScalarType dtype);

struct Header {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // where the data starts
  size_t data_bytes = 0;   // numel(shape) * element size
};

// Parses the header of the .npy file in bytes[0, size) (versions 1-3; dtypes f2 f4 f8 i1 i2
// i4 i8 u1 b1) and checks that the data is all there. "" on success, else why; callers
// report "cannot read <path> as .npy: <why>".
std::string parse_header(const uint8_t* bytes, size_t size, size_t max_rank, Header* out);

// Everything before the data of a version 1.0 file holding `descr` with `sizes`.
std::string header_bytes(const char* descr, const int64_t* sizes, size_t rank);

}  // namespace npy
}  // namespace ember
