// .npy reading and writing (the NumPy format: magic, version, header dict, raw data).
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/module/tensor_ptr.h"

namespace ember {
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

Status bad(const std::string& path, const std::string& why) {
  return Status(Error::InvalidArgument, "cannot read " + path + " as .npy: " + why);
}

}  // namespace

Expected<TensorPtr> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Error::AccessFailed, "cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) {
    return bad(path, "missing the \\x93NUMPY magic");
  }
  int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad(path, "truncated header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[8 + i]);
    offset = 12;
  } else {
    return bad(path, "unsupported version " + std::to_string(major));
  }
  if (header_len > bytes.size() - offset) return bad(path, "truncated header");
  std::string header = bytes.substr(offset, header_len);
  offset += header_len;

  auto field = [&](const std::string& key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t colon = header.find(':', k);
    return colon == std::string::npos ? "" : header.substr(colon + 1);
  };
  std::string descr_field = field("descr");
  size_t q1 = descr_field.find('\''), q2 = descr_field.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) return bad(path, "no dtype in header");
  std::string descr = descr_field.substr(q1 + 1, q2 - q1 - 1);
  if (descr == "<u1" || descr == "<i1") descr = descr == "<u1" ? "|u1" : "|i1";
  if (descr == "<b1") descr = "|b1";
  const DescrEntry* entry = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (descr == e.descr) entry = &e;
  }
  if (entry == nullptr) return bad(path, "unsupported dtype '" + descr + "'");
  if (field("fortran_order").find("True") == 0 ||
      field("fortran_order").find(" True") == 0) {
    return bad(path, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }
  std::string shape_field = field("shape");
  size_t p1 = shape_field.find('('), p2 = shape_field.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) return bad(path, "no shape in header");
  std::vector<int64_t> sizes;
  std::stringstream shape(shape_field.substr(p1 + 1, p2 - p1 - 1));
  std::string item;
  while (std::getline(shape, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (v < 0) return bad(path, "negative dimension");
    sizes.push_back(v);
  }
  if (sizes.size() > static_cast<size_t>(kMaxRank)) return bad(path, "rank too large");
  TensorPtr t = empty(sizes, entry->dtype);
  if (bytes.size() - offset < t.nbytes()) return bad(path, "data shorter than the header's shape");
  std::memcpy(t.raw_data(), bytes.data() + offset, t.nbytes());
  return t;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = nullptr;
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype == tensor.dtype) descr = e.descr;
  }
  if (descr == nullptr) {
    return Status(Error::NotSupported, std::string("cannot write ") + scalar_type_name(tensor.dtype) + " to .npy");
  }
  std::string shape = "(";
  for (int i = 0; i < tensor.rank; ++i) {
    shape += std::to_string(tensor.sizes[i]) + (tensor.rank == 1 ? ",)" : i + 1 < tensor.rank ? ", " : ")");
  }
  if (tensor.rank == 0) shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status(Error::AccessFailed, "cannot write " + path);
  out.write("\x93NUMPY\x01\x00", 8);
  char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(len, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.data), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) return Status(Error::AccessFailed, "failed writing " + path);
  return Status::Ok();
}

}  // namespace ember
