// Helpers shared by the .ptd data file tests (data_file_format_test.cc: hand-built files;
// data_file_test.cc: exported programs and their data files). Test-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/error.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/platform/diagnostic.h"
#include "runtime/program/data_file.h"
#include "test/support/program_builder.h"

namespace ember {
namespace data_file_testing {

using testing::PteBytes;
using Verification = DataFile::Verification;

// An exactly sized, 64-byte aligned copy (ASan then sees any read past the end).
PteBytes aligned(const std::vector<uint8_t>& v);
PteBytes aligned(const uint8_t* data, size_t size);

bool contains(const std::string& haystack, const std::string& needle);

// DataFile::load over `bytes` (which must outlive the result; the loader need not).
Result<DataFile> load_data(const PteBytes& bytes, Verification verification, Diagnostic* diag);

// "float32 [2, 3]": how the runtime's messages name a tensor's type.
std::string describe(ScalarType dtype, const std::vector<int64_t>& sizes);

// Loads at Structure and Full (both must refuse with `want` and the same message, checked with
// gtest's EXPECT) and returns the Full message.
std::string expect_refused(const PteBytes& ptd, Error want);

}  // namespace data_file_testing
}  // namespace ember
