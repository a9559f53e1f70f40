#include "extension/npy/npy_format.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace ember {
namespace npy {
namespace {

struct DescrEntry {
  const char* descr;
  ScalarType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {"<f4", ScalarType::Float32}, {"<f8", ScalarType::Float64}, {"<f2", ScalarType::Float16},
    {"|i1", ScalarType::Int8},    {"<i2", ScalarType::Int16},   {"<i4", ScalarType::Int32},
    {"<i8", ScalarType::Int64},   {"|u1", ScalarType::UInt8},   {"|b1", ScalarType::Bool},
};

}  // namespace

const char* descr_of(ScalarType dtype) {
  const char* descr = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == dtype) descr = e.descr;
  }
  return descr;
}

std::string parse_header(const uint8_t* bytes, size_t size, size_t max_rank, Header* out) {
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) return "missing the \\x93NUMPY magic";
  int major = bytes[6];
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return "truncated header";
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | bytes[8 + i];
    offset = 12;
  } else {
    return "unsupported version " + std::to_string(major);
  }
  if (header_len > size - offset) return "truncated header";
  std::string header(reinterpret_cast<const char*>(bytes) + offset, header_len);
  offset += header_len;

  auto field = [&](const std::string& key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr_field = field("descr");
  size_t q1 = descr_field.find('\''), q2 = descr_field.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return "no dtype in header";
  std::string descr = descr_field.substr(q1 + 1, q2 - q1 - 1);
  if (descr == "<u1" || descr == "<i1") descr = descr == "<u1" ? "|u1" : "|i1";
  if (descr == "<b1") descr = "|b1";
  const DescrEntry* entry = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (descr == e.descr) entry = &e;
  }
  if (entry == nullptr) return "unsupported dtype '" + descr + "'";
  if (field("fortran_order").find("True") == 0 || field("fortran_order").find(" True") == 0) {
    return "Fortran-order arrays are not supported; save with np.ascontiguousarray";
  }
  std::string shape_field = field("shape");
  size_t p1 = shape_field.find('('), p2 = shape_field.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) return "no shape in header";
  std::vector<int64_t> sizes;
  std::stringstream shape(shape_field.substr(p1 + 1, p2 - p1 - 1));
  std::string item;
  while (std::getline(shape, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (v < 0) return "negative dimension";
    sizes.push_back(v);
  }
  if (sizes.size() > max_rank) return "rank too large";
  const size_t available = size - offset;
  // A zero dimension anywhere makes the array empty: the dimensions before it must not be
  // checked against the (absent) data.
  const bool empty = std::find(sizes.begin(), sizes.end(), 0) != sizes.end();
  size_t nbytes = empty ? 0 : element_size(entry->dtype);
  for (int64_t s : sizes) {
    if (empty) break;
    if (static_cast<size_t>(s) > available / nbytes) return "data shorter than the header's shape";
    nbytes *= static_cast<size_t>(s);
  }
  if (available < nbytes) return "data shorter than the header's shape";
  out->dtype = entry->dtype;
  out->shape = std::move(sizes);
  out->data_offset = offset;
  out->data_bytes = nbytes;
  return "";
}

std::string header_bytes(const char* descr, const int64_t* sizes, size_t rank) {
  std::string shape = "(";
  for (size_t i = 0; i < rank; ++i) {
    shape += std::to_string(sizes[i]) + (rank == 1 ? ",)" : i + 1 < rank ? ", " : ")");
  }
  if (rank == 0) shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header;
}

}  // namespace npy
}  // namespace ember
