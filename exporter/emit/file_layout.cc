#include "exporter/emit/file_layout.h"

#include <cstring>

#include "runtime/core/content_digest.h"
#include "runtime/program/file_header.h"

namespace ember {
namespace exporter {

std::vector<uint8_t> assemble_file(const char* magic, uint32_t version, const uint8_t* flatbuffer,
                                   size_t flatbuffer_size, const std::vector<uint8_t>& segment_area,
                                   bool has_segments) {
  FileHeader h;
  h.format_version = version;
  h.header_size = kFileHeaderSize;
  h.flatbuffer_offset = kFileHeaderSize;
  h.flatbuffer_size = flatbuffer_size;
  h.segment_area_offset = has_segments ? align_to_segment(kFileHeaderSize + flatbuffer_size) : 0;
  h.segment_area_size = segment_area.size();
  const size_t total = has_segments ? h.segment_area_offset + segment_area.size() : kFileHeaderSize + flatbuffer_size;
  std::vector<uint8_t> file(total, 0);
  std::memcpy(file.data() + kFileHeaderSize, flatbuffer, flatbuffer_size);
  if (!segment_area.empty()) std::memcpy(file.data() + h.segment_area_offset, segment_area.data(), segment_area.size());
  // The content digest covers every byte after the header; caches of the runtime key on it.
  h.content_digest = content_digest(file.data() + kFileHeaderSize, file.size() - kFileHeaderSize);
  // The header goes through a fixed array: writing it straight into the vector trips GCC 12's
  // -Warray-bounds false positive at -O2.
  uint8_t header[kFileHeaderSize];
  write_file_header(h, header, magic);
  std::memcpy(file.data(), header, kFileHeaderSize);
  return file;
}

}  // namespace exporter
}  // namespace ember
