#include "runtime/program/file_header.h"

namespace ember {

Error check_file_header(const FileHeader& header, size_t file_size, uint32_t max_version, const char* kind,
                        Diagnostic* diag) {
  if (header.format_version > max_version) {
    return fail(diag, Error::VersionMismatch,
                "%s format version %u is newer than this runtime (supports up to %u); "
                "upgrade the runtime or export with a matching ember",
                kind, header.format_version, max_version);
  }
  if (header.format_version == 0 || header.header_size != kFileHeaderSize ||
      header.flatbuffer_offset != kFileHeaderSize || header.flatbuffer_size < 8 ||
      header.flatbuffer_size > file_size - kFileHeaderSize) {
    return fail(diag, Error::InvalidProgram,
                "invalid %s header (version %u, flatbuffer %llu bytes in a %zu-byte file); "
                "the file is truncated or corrupt",
                kind, header.format_version, static_cast<unsigned long long>(header.flatbuffer_size), file_size);
  }
  const uint64_t fb_end = header.flatbuffer_offset + header.flatbuffer_size;
  if (header.segment_area_size != 0 &&
      (header.segment_area_offset % kSegmentAlignment != 0 || header.segment_area_offset < fb_end ||
       header.segment_area_offset > file_size || header.segment_area_size > file_size - header.segment_area_offset)) {
    return fail(diag, Error::InvalidProgram,
                "invalid %s: the data segment area is misaligned or lies outside the file "
                "(truncated or corrupt)",
                kind);
  }
  return Error::Ok;
}

Result<FreeableBuffer> load_exactly(DataLoader* loader, size_t offset, size_t size, const char* what,
                                    Diagnostic* diag) {
  Result<FreeableBuffer> bytes = loader->load(offset, size);
  if (!bytes.ok()) return fail(diag, bytes.error(), "cannot read %s", what);
  if (bytes->size() != size || (size > 0 && bytes->data() == nullptr)) {
    return fail(diag, Error::AccessFailed, "cannot read %s: got %zu of %zu bytes (was the file truncated while open?)",
                what, bytes->size(), size);
  }
  return bytes;
}

}  // namespace ember
