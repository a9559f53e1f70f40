// Builds the .ptd data file of `ember export --external-weights W.ptd` (layout in
// docs/pte-format.md, "Data files"; schema/data_file.fbs): named tensors a program refers to by
// key instead of carrying them.
//
// Appending: a writer opened over an existing data file keeps every entry it has (same key,
// same bytes), reuses one whose dtype, sizes and bytes equal a new tensor's, and adds only what
// is new, so programs exported against the file before stay valid. A name that already holds
// other bytes gets a new key, `name~<12 hex digits of the content digest>`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/core/content_digest.h"
#include "runtime/core/scalar_type.h"

namespace ember {
namespace exporter {

struct DataFileStats {
  size_t entries = 0;           // in the file written
  size_t existing_entries = 0;  // read from the file it was opened over
  size_t reused_entries = 0;    // tensors this export found already stored (that file's or its own)
  size_t added_entries = 0;
  size_t added_bytes = 0;
  size_t file_bytes = 0;        // of the last bytes() call
};

// The key of a tensor stored in the writer, and what the program records about it.
struct DataFileRef {
  std::string key;
  ContentDigest digest;
};

class DataFileWriter {
 public:
  DataFileWriter() = default;  // an empty data file
  // Starts from the entries of the data file at `path` when it exists; a file there that is
  // not a valid data file (or is damaged) is an error, so nothing is silently replaced.
  static absl::StatusOr<DataFileWriter> open_for_append(const std::string& path);
  // Starts from a data file's bytes (validated fully, contents hashed).
  static absl::StatusOr<DataFileWriter> from_bytes(const uint8_t* data, size_t size);

  // Stores a tensor (contiguous little-endian `bytes` of `dtype` and `sizes`) named `name`
  // (empty: "constant"), or finds it stored already; returns its key.
  DataFileRef add(const std::string& name, ScalarType dtype, const std::vector<int64_t>& sizes,
                  const std::vector<uint8_t>& bytes);

  // The whole file: header, index sorted by key, 64-byte aligned tensors.
  std::vector<uint8_t> bytes();
  const DataFileStats& stats() const { return stats_; }

 private:
  struct Entry {
    ScalarType dtype = ScalarType::Float32;
    std::vector<int64_t> sizes;
    std::vector<uint8_t> bytes;
    ContentDigest digest;
  };
  std::map<std::string, Entry> entries_;                      // by key: the file's order
  std::multimap<uint64_t, std::string> by_digest_;            // digest.lo -> keys
  DataFileStats stats_;
};

}  // namespace exporter
}  // namespace ember
