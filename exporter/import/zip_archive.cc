#include "exporter/import/zip_archive.h"

#include <zip.h>

#include <algorithm>

namespace ember {
namespace exporter {

absl::StatusOr<std::unique_ptr<ZipArchive>> ZipArchive::open(const std::string& path) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (z == nullptr) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string msg = "cannot open " + path + " as a .pt2 (zip) archive: " + zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return absl::InvalidArgumentError(msg);
  }
  return wrap(z, path);
}

absl::StatusOr<std::unique_ptr<ZipArchive>> ZipArchive::open_memory(const void* data, size_t size,
                                                                     const std::string& name) {
  zip_error_t ze;
  zip_error_init(&ze);
  zip_source_t* src = zip_source_buffer_create(size == 0 ? "" : data, size, 0, &ze);
  zip_t* z = src == nullptr ? nullptr : zip_open_from_source(src, ZIP_RDONLY, &ze);
  if (z == nullptr) {
    if (src != nullptr) zip_source_free(src);
    std::string msg = "cannot open " + name + " as a .pt2 (zip) archive: " + zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return absl::InvalidArgumentError(msg);
  }
  zip_error_fini(&ze);
  return wrap(z, name);
}

std::unique_ptr<ZipArchive> ZipArchive::wrap(void* zip, const std::string& path) {
  zip_t* z = static_cast<zip_t*>(zip);
  std::unique_ptr<ZipArchive> a(new ZipArchive());
  a->zip_ = z;
  a->path_ = path;
  zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z, static_cast<zip_uint64_t>(i), 0);
    if (name != nullptr) a->entries_.push_back(name);
  }
  return a;
}

ZipArchive::~ZipArchive() {
  if (zip_ != nullptr) zip_discard(static_cast<zip_t*>(zip_));
}

bool ZipArchive::contains(const std::string& name) const {
  return std::find(entries_.begin(), entries_.end(), name) != entries_.end();
}

absl::StatusOr<std::vector<uint8_t>> ZipArchive::read(const std::string& name) const {
  zip_t* z = static_cast<zip_t*>(zip_);
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, name.c_str(), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
    return absl::NotFoundError(path_ + ": archive has no entry '" + name + "'");
  }
  // The sizes in the archive are untrusted: a stored entry's two sizes must agree, and the
  // buffer grows with the bytes actually read (a corrupt size field must not make us
  // allocate gigabytes up front).
  if ((st.valid & ZIP_STAT_COMP_METHOD) && (st.valid & ZIP_STAT_COMP_SIZE) &&
      st.comp_method == ZIP_CM_STORE && st.comp_size != st.size) {
    return absl::DataLossError(path_ + ": entry '" + name + "' is corrupt (stored entry sizes disagree)");
  }
  zip_file_t* f = zip_fopen(z, name.c_str(), 0);
  if (f == nullptr) return absl::DataLossError(path_ + ": cannot open entry '" + name + "': " + zip_strerror(z));
  std::vector<uint8_t> data;
  constexpr zip_uint64_t kChunk = 1 << 20;
  bool ok = true;
  while (data.size() < st.size) {
    zip_uint64_t want = std::min<zip_uint64_t>(kChunk, st.size - data.size());
    size_t old = data.size();
    data.resize(old + static_cast<size_t>(want));
    zip_int64_t got = zip_fread(f, data.data() + old, want);
    if (got <= 0) {
      ok = false;
      break;
    }
    data.resize(old + static_cast<size_t>(got));
  }
  zip_fclose(f);
  if (!ok || data.size() != st.size) {
    return absl::DataLossError(path_ + ": entry '" + name + "' is truncated or corrupt");
  }
  return data;
}

absl::StatusOr<std::string> ZipArchive::read_text(const std::string& name) const {
  auto bytes = read(name);
  if (!bytes.ok()) return bytes.status();
  return std::string(bytes->begin(), bytes->end());
}

}  // namespace exporter
}  // namespace ember
