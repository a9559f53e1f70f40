// The byte layout every file the exporter writes shares (.pte programs, .ptd data files;
// docs/pte-format.md): the 64-byte header, the FlatBuffer, then the 64-byte aligned segment area,
// with the content digest of every byte after the header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember {
namespace exporter {

// `magic` is kPteMagic or kPtdMagic; `has_segments` false writes no segment area (offset 0).
std::vector<uint8_t> assemble_file(const char* magic, uint32_t version, const uint8_t* flatbuffer,
                                   size_t flatbuffer_size, const std::vector<uint8_t>& segment_area,
                                   bool has_segments);

}  // namespace exporter
}  // namespace ember
