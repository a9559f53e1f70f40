// The on-disk format of the XNNPACK packed-weights cache (see weights_file_cache.h): one
// index file per (program, machine) and one block file per distinct packed block. Pure
// encoding and validation, no I/O, so the fuzzer drives it directly
// (test/fuzz/weights_index_fuzzer.cc).
//
// Index file "<program digest>-<environment digest>.index", little-endian:
//   offset size
//   0      8    magic "EMBXWIDX"
//   8      4    format version (kWeightsIndexVersion)
//   12     4    number of entries N
//   16     16   program content digest (the .pte header's, lo then hi)
//   32     16   environment digest (XNNPACK build, CPU features: weights_environment.cc)
//   48     N*48 entries:
//                 0  4  seed   XNNPACK's packing seed (microkernel tile sizes, op shape)
//                 4  4  flags  bit 0: ambiguous (one key, several packings: never served)
//                 8  8  kernel offset in the program's segment area (kNoOffset: none)
//                 16 8  bias offset, likewise
//                 24 8  packed size in bytes (1 .. kMaxBlockBytes)
//                 32 16 block digest: names the block file holding the packed bytes
//   48+N*48 16  digest of every byte before it
//
// Block file "blocks/<block digest>.bin": a kBlockHeaderBytes header (magic "EMBXWBLK",
// version, size, digest, zero padding) and the packed bytes at offset kBlockHeaderBytes (a
// multiple of XNNPACK's allocation alignment, so a page-aligned mapping serves them in place).
// The block's bytes are not re-hashed when mapped: files are written whole under a temporary
// name and renamed, so a reader sees a complete file or none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/core/content_digest.h"

namespace ember {
namespace xnnpack {

constexpr uint32_t kWeightsIndexVersion = 1;
constexpr uint64_t kNoOffset = ~0ull;
constexpr uint64_t kMaxBlockBytes = 1ull << 40;
constexpr size_t kIndexHeaderBytes = 48;
constexpr size_t kIndexEntryBytes = 48;
constexpr size_t kBlockHeaderBytes = 128;

struct IndexEntry {
  uint32_t seed = 0;
  bool ambiguous = false;
  uint64_t kernel_offset = kNoOffset;
  uint64_t bias_offset = kNoOffset;
  uint64_t size = 0;
  ContentDigest block;
  bool same_key(uint32_t s, uint64_t k, uint64_t b) const {
    return seed == s && kernel_offset == k && bias_offset == b;
  }
};

struct IndexFile {
  ContentDigest program;
  ContentDigest environment;
  std::vector<IndexEntry> entries;
};

// Why a file was refused (a static string), or nullptr when it was accepted.
const char* parse_index(const uint8_t* data, size_t size, const ContentDigest& program,
                        const ContentDigest& environment, IndexFile* out);
std::vector<uint8_t> encode_index(const IndexFile& index);

void encode_block_header(const ContentDigest& digest, uint64_t size, uint8_t out[kBlockHeaderBytes]);
// nullptr when `header` (the first kBlockHeaderBytes of a file of `file_size` bytes)
// describes a block of `size` bytes named `digest`; else why not.
const char* check_block_header(const uint8_t* header, uint64_t file_size, const ContentDigest& digest,
                               uint64_t size);

}  // namespace xnnpack
}  // namespace ember
