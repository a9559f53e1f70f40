// The fixed 64-byte header at the start of every .pte program and .ptd data file
// (little-endian):
//
//   offset size field
//   0      8    magic "EMBERPTE" (program) or "EMBERPTD" (data file)
//   8      4    format_version (kFormatVersion)
//   12     4    header_size (64)
//   16     8    flatbuffer_offset (64)
//   24     8    flatbuffer_size
//   32     8    segment_area_offset (a multiple of 64; 0 when there are no segments)
//   40     8    segment_area_size
//   48     16   content digest (runtime/core/content_digest.h) of every byte after the
//                header, lo then hi; all zero when the writer computed none (files written
//                before it existed). Caches key on it (the XNNPACK packed-weights cache);
//                loading does not recompute it.
//
// Segments (weights, initial state, delegate blobs) follow the FlatBuffer, each at a
// 64-byte aligned offset inside the segment area, so a mapped file uses them in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/core/content_digest.h"
#include "runtime/core/error.h"
#include "runtime/core/little_endian.h"
#include "runtime/core/result.h"
#include "runtime/loader/data_loader.h"
#include "runtime/platform/diagnostic.h"

namespace ember {

constexpr char kPteMagic[8] = {'E', 'M', 'B', 'E', 'R', 'P', 'T', 'E'};
constexpr char kPtdMagic[8] = {'E', 'M', 'B', 'E', 'R', 'P', 'T', 'D'};
// Bump on incompatible change; see schema/README.md. The exporter writes the lowest version
// a program needs, so older runtimes keep reading every program they can run:
constexpr uint32_t kFormatVersionInline = 1;        // every segment inside the file
constexpr uint32_t kFormatVersionExternalData = 2;  // some segments in a .ptd (Segment.external)
constexpr uint32_t kFormatVersionSharedState = 3;   // state shared by methods (Program.shared_state)
constexpr uint32_t kFormatVersion = kFormatVersionSharedState;  // the newest this runtime reads
constexpr uint32_t kDataFileFormatVersion = 1;  // .ptd files (schema/data_file.fbs)
constexpr size_t kFileHeaderSize = 64;
constexpr size_t kSegmentAlignment = 64;
// `n` rounded up to kSegmentAlignment (writers place segments and areas at such offsets).
constexpr size_t align_to_segment(size_t n) {
  return (n + kSegmentAlignment - 1) / kSegmentAlignment * kSegmentAlignment;
}

struct FileHeader {
  uint32_t format_version = 0;
  uint32_t header_size = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t segment_area_offset = 0;
  uint64_t segment_area_size = 0;
  // Not read by parse_file_header (the loader keeps the raw bytes: read_content_digest).
  ContentDigest content_digest;  // zero: none
};

constexpr size_t kContentDigestOffset = 48;

// The content digest of a header (its 16 bytes at kContentDigestOffset).
inline ContentDigest read_content_digest(const uint8_t* header) {
  ContentDigest d;
  d.lo = read_le(header + kContentDigestOffset, 8);
  d.hi = read_le(header + kContentDigestOffset + 8, 8);
  return d;
}

// Parses the header; false when the magic is not `magic` (kPteMagic or kPtdMagic).
inline bool parse_file_header(const uint8_t* bytes, FileHeader* out, const char* magic = kPteMagic) {
  if (std::memcmp(bytes, magic, 8) != 0) return false;
  out->format_version = static_cast<uint32_t>(read_le(bytes + 8, 4));
  out->header_size = static_cast<uint32_t>(read_le(bytes + 12, 4));
  out->flatbuffer_offset = read_le(bytes + 16, 8);
  out->flatbuffer_size = read_le(bytes + 24, 8);
  out->segment_area_offset = read_le(bytes + 32, 8);
  out->segment_area_size = read_le(bytes + 40, 8);
  return true;
}

inline void write_file_header(const FileHeader& h, uint8_t* bytes, const char* magic = kPteMagic) {
  std::memset(bytes, 0, kFileHeaderSize);
  std::memcpy(bytes, magic, 8);
  write_le(bytes + 8, h.format_version, 4);
  write_le(bytes + 12, h.header_size, 4);
  write_le(bytes + 16, h.flatbuffer_offset, 8);
  write_le(bytes + 24, h.flatbuffer_size, 8);
  write_le(bytes + 32, h.segment_area_offset, 8);
  write_le(bytes + 40, h.segment_area_size, 8);
  write_le(bytes + kContentDigestOffset, h.content_digest.lo, 8);
  write_le(bytes + kContentDigestOffset + 8, h.content_digest.hi, 8);
}

// Checks a parsed header against a file of `file_size` bytes: version 1..max_version (newer:
// VersionMismatch), header and FlatBuffer placement, segment area alignment and bounds
// (InvalidProgram). `kind` names the file in messages: "program" or "data file".
Error check_file_header(const FileHeader& header, size_t file_size, uint32_t max_version, const char* kind,
                        Diagnostic* diag);

// `size` bytes at `offset` from `loader`, all of them: a failed read keeps the loader's error
// and a short one is AccessFailed ("cannot read <what>"), never a buffer shorter than asked.
Result<FreeableBuffer> load_exactly(DataLoader* loader, size_t offset, size_t size, const char* what,
                                    Diagnostic* diag);

}  // namespace ember
