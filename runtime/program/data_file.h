// DataFile: a loaded .ptd file of named tensors kept outside programs (`ember export
// --external-weights W.ptd`; layout in docs/pte-format.md, "Data files"). A Program whose
// segments refer to entries by key is loaded with the data files that hold them
// (Program::load's ExternalData), and reads their bytes in place.
//
// Lifetime: the DataLoader must outlive the DataFile when it returns in-place buffers (mmap,
// caller buffer), and the DataFile must outlive every Program loaded against it. One DataFile
// may serve any number of Programs (that is how several programs share one copy of their base
// weights). Thread-safety: a loaded DataFile is immutable; its const methods may be called
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/content_digest.h"
#include "runtime/core/result.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"
#include "runtime/loader/data_loader.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace schema {
struct DataFile;
}  // namespace schema

// One named tensor of a data file; every pointer points into the DataFile.
struct DataEntryView {
  const char* key = nullptr;  // NUL-terminated
  ScalarType dtype = ScalarType::Float32;
  Span<const int64_t> sizes;
  Span<const uint8_t> bytes;  // contiguous, little-endian; 64-byte aligned in the file
  ContentDigest digest;       // as recorded by the writer (checked against the bytes by Full)
};

class DataFile {
 public:
  enum class Verification {
    Minimal,    // header + FlatBuffer identifier: trusted files, fastest load
    Structure,  // + FlatBuffer verifier, every entry's dtype, sizes, bounds, alignment, key order
    Full,       // + every entry's bytes hashed against its recorded digest (reads the whole file)
  };

  static Result<DataFile> load(DataLoader* loader, Verification verification = Verification::Full,
                               Diagnostic* diag = nullptr);

  DataFile(DataFile&&) noexcept;
  DataFile& operator=(DataFile&&) noexcept;
  ~DataFile();

  size_t num_entries() const;
  // Entry `index` (in key order); NotFound when out of range.
  Result<DataEntryView> entry(size_t index) const;
  // The entry named `key` (`key_size` bytes, no NUL needed); NotFound when absent.
  // O(log n) string comparisons; allocation-free.
  Result<DataEntryView> find(const char* key, size_t key_size) const;
  // The header's digest of every byte after the header (zero when the writer computed none).
  ContentDigest content_digest() const { return content_digest_; }
  // Every entry's bytes lie inside this range (empty without entries).
  Span<const uint8_t> segment_area() const {
    return Span<const uint8_t>(static_cast<const uint8_t*>(segment_data_.data()), segment_data_.size());
  }

 private:
  DataFile() = default;
  FreeableBuffer flatbuffer_data_;
  FreeableBuffer segment_data_;
  const schema::DataFile* file_ = nullptr;
  ContentDigest content_digest_;
};

}  // namespace ember
