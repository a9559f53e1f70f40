// .npy reading and writing for TensorPtr / Tensor (the format itself: npy_format.h).
#include <cstring>
#include <fstream>

#include "extension/npy/npy_format.h"
#include "extension/module/tensor_ptr.h"

namespace ember {

Expected<TensorPtr> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Error::AccessFailed, "cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  npy::Header header;
  std::string why = npy::parse_header(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                      static_cast<size_t>(kMaxRank), &header);
  if (!why.empty()) return Status(Error::InvalidArgument, "cannot read " + path + " as .npy: " + why);
  TensorPtr t = empty(header.shape, header.dtype);
  std::memcpy(t.raw_data(), bytes.data() + header.data_offset, t.nbytes());
  return t;
}

Status write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = npy::descr_of(tensor.dtype);
  if (descr == nullptr) {
    return Status(Error::NotSupported, std::string("cannot write ") + scalar_type_name(tensor.dtype) + " to .npy");
  }
  const std::string header = npy::header_bytes(descr, tensor.sizes, static_cast<size_t>(tensor.rank));
  std::ofstream out(path, std::ios::binary);
  if (!out) return Status(Error::AccessFailed, "cannot write " + path);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(tensor.data), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) return Status(Error::AccessFailed, "failed writing " + path);
  return Status::Ok();
}

}  // namespace ember
