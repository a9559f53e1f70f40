// Read-only access to a zip archive (a .pt2) through libzip. Never throws.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ember {
namespace exporter {

class ZipArchive {
 public:
  static absl::StatusOr<std::unique_ptr<ZipArchive>> open(const std::string& path);
  // An archive held in memory (`data` must outlive the ZipArchive); `name` is used in messages.
  static absl::StatusOr<std::unique_ptr<ZipArchive>> open_memory(const void* data, size_t size,
                                                                  const std::string& name);
  ~ZipArchive();
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;

  const std::vector<std::string>& entries() const { return entries_; }
  bool contains(const std::string& name) const;
  absl::StatusOr<std::vector<uint8_t>> read(const std::string& name) const;
  absl::StatusOr<std::string> read_text(const std::string& name) const;
  const std::string& path() const { return path_; }

 private:
  ZipArchive() = default;
  static std::unique_ptr<ZipArchive> wrap(void* zip, const std::string& path);
  void* zip_ = nullptr;  // zip_t*
  std::string path_;
  std::vector<std::string> entries_;
};

}  // namespace exporter
}  // namespace ember
