#include "exporter/util/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace ember {
namespace exporter {
namespace {

absl::Status bad(const std::string& what, const std::string& why) {
  return absl::InvalidArgumentError("cannot read " + what + " as .npy: " + why);
}

const char* descr_of(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return "<f4";
    case ScalarType::Float64: return "<f8";
    case ScalarType::Float16: return "<f2";
    case ScalarType::Int64: return "<i8";
    case ScalarType::Int32: return "<i4";
    case ScalarType::Int16: return "<i2";
    case ScalarType::Int8: return "|i1";
    case ScalarType::UInt8: return "|u1";
    case ScalarType::Bool: return "|b1";
    default: return nullptr;
  }
}

}  // namespace

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
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) return bad(what, "bad magic");
  int major = b[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = b[8] | (b[9] << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return bad(what, "truncated header");
    header_len = b[8] | (b[9] << 8) | (b[10] << 16) | (static_cast<size_t>(b[11]) << 24);
    start = 12;
  } else {
    return bad(what, "unsupported version " + std::to_string(major));
  }
  if (start + header_len > b.size()) return bad(what, "truncated header");
  std::string h(b.begin() + start, b.begin() + start + header_len);
  auto value_of = [&](const std::string& key) -> std::string {
    size_t k = h.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t c = h.find(':', k);
    return c == std::string::npos ? "" : h.substr(c + 1);
  };
  std::string descr = value_of("descr");
  size_t q1 = descr.find('\''), q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return bad(what, "no descr");
  descr = descr.substr(q1 + 1, q2 - q1 - 1);
  NpyArray a;
  static const std::pair<const char*, ScalarType> kTypes[] = {
      {"<f4", ScalarType::Float32}, {"<f8", ScalarType::Float64}, {"<f2", ScalarType::Float16},
      {"<i8", ScalarType::Int64},   {"<i4", ScalarType::Int32},   {"<i2", ScalarType::Int16},
      {"|i1", ScalarType::Int8},    {"|u1", ScalarType::UInt8},   {"|b1", ScalarType::Bool},
  };
  bool found = false;
  for (const auto& [d, t] : kTypes) if (descr == d) { a.dtype = t; found = true; }
  if (!found) return bad(what, "unsupported dtype " + descr);
  std::string fo = value_of("fortran_order");
  if (fo.find("True") != std::string::npos && fo.find("True") < fo.find(',')) return bad(what, "Fortran order");
  std::string shape = value_of("shape");
  size_t p1 = shape.find('('), p2 = shape.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) return bad(what, "no shape");
  std::string dims = shape.substr(p1 + 1, p2 - p1 - 1);
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string d = dims.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (d.find_first_of("0123456789") != std::string::npos) a.shape.push_back(std::stoll(d));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  size_t nbytes = static_cast<size_t>(a.numel()) * element_size(a.dtype);
  size_t data_start = start + header_len;
  if (data_start + nbytes > b.size()) return bad(what, "truncated data");
  a.data.assign(b.begin() + data_start, b.begin() + data_start + nbytes);
  return a;
}

absl::StatusOr<NpyArray> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError("cannot open " + path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

absl::Status write_npy(const std::string& path, const NpyArray& a) {
  const char* d = descr_of(a.dtype);
  if (d == nullptr) return absl::InvalidArgumentError("cannot write this dtype to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 ? "," : (i + 1 < a.shape.size() ? ", " : ""));
  shape += ")";
  std::string h = std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + h.size() + 1;
  size_t pad = (64 - total % 64) % 64;
  h += std::string(pad, ' ') + "\n";
  std::ofstream f(path, std::ios::binary);
  if (!f) return absl::InternalError("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
  f.write(len, 2);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  return f ? absl::OkStatus() : absl::InternalError("write failed: " + path);
}

}  // namespace exporter
}  // namespace ember
