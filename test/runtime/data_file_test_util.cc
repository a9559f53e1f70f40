#include "test/runtime/data_file_test_util.h"

#include <gtest/gtest.h>

#include "runtime/loader/buffer_data_loader.h"

namespace ember {
namespace data_file_testing {

PteBytes aligned(const std::vector<uint8_t>& v) { return PteBytes(v.begin(), v.end()); }
PteBytes aligned(const uint8_t* data, size_t size) { return PteBytes(data, data + size); }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

Result<DataFile> load_data(const PteBytes& bytes, Verification verification, Diagnostic* diag) {
  BufferDataLoader loader(bytes.data(), bytes.size());
  return DataFile::load(&loader, verification, diag);
}

std::string describe(ScalarType dtype, const std::vector<int64_t>& sizes) {
  std::string s = std::string(scalar_type_name(dtype)) + " [";
  for (size_t d = 0; d < sizes.size(); ++d) s += (d == 0 ? "" : ", ") + std::to_string(sizes[d]);
  return s + "]";
}

std::string expect_refused(const PteBytes& ptd, Error want) {
  Diagnostic structure_diag, full_diag;
  Result<DataFile> s = load_data(ptd, Verification::Structure, &structure_diag);
  EXPECT_EQ(s.error(), want) << structure_diag.message;
  Result<DataFile> f = load_data(ptd, Verification::Full, &full_diag);
  EXPECT_EQ(f.error(), want) << full_diag.message;
  EXPECT_STREQ(structure_diag.message, full_diag.message);
  return full_diag.message;
}

}  // namespace data_file_testing
}  // namespace ember
