#include "exporter/util/npy.h"

#include <cstdint>
#include <fstream>
#include <iterator>

#include "extension/npy/npy_format.h"

namespace ember {
namespace exporter {

double NpyArray::at(int64_t i) const {
  switch (dtype) {
    case ScalarType::Float32: return as<float>()[i];
    case ScalarType::Float64: return as<double>()[i];
    case ScalarType::Int64: return static_cast<double>(as<int64_t>()[i]);
    case ScalarType::Int32: return as<int32_t>()[i];
    case ScalarType::Int16: return as<int16_t>()[i];
    case ScalarType::Int8: return as<int8_t>()[i];
    case ScalarType::UInt8: return as<uint8_t>()[i];
    case ScalarType::Bool: return as<uint8_t>()[i] ? 1.0 : 0.0;
    default: return 0;
  }
}

absl::StatusOr<NpyArray> parse_npy(const std::vector<uint8_t>& b, const std::string& what) {
  npy::Header header;
  std::string why = npy::parse_header(b.data(), b.size(), SIZE_MAX, &header);
  if (!why.empty()) return absl::InvalidArgumentError("cannot read " + what + " as .npy: " + why);
  NpyArray a;
  a.dtype = header.dtype;
  a.shape = std::move(header.shape);
  a.data.assign(b.begin() + header.data_offset, b.begin() + header.data_offset + header.data_bytes);
  return a;
}

absl::StatusOr<NpyArray> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError("cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

absl::Status write_npy(const std::string& path, const NpyArray& a) {
  const char* d = npy::descr_of(a.dtype);
  if (d == nullptr) return absl::InvalidArgumentError("cannot write this dtype to .npy");
  const std::string h = npy::header_bytes(d, a.shape.data(), a.shape.size());
  std::ofstream f(path, std::ios::binary);
  if (!f) return absl::InternalError("cannot write " + path);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  return f ? absl::OkStatus() : absl::InternalError("write failed: " + path);
}

}  // namespace exporter
}  // namespace ember
