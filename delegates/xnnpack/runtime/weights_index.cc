#include "delegates/xnnpack/runtime/weights_index.h"

#include <algorithm>
#include <cstring>

#include "runtime/core/little_endian.h"

namespace ember {
namespace xnnpack {

namespace {

constexpr char kIndexMagic[8] = {'E', 'M', 'B', 'X', 'W', 'I', 'D', 'X'};
constexpr char kBlockMagic[8] = {'E', 'M', 'B', 'X', 'W', 'B', 'L', 'K'};

ContentDigest read_digest(const uint8_t* p) {
  ContentDigest d;
  d.lo = read_le(p, 8);
  d.hi = read_le(p + 8, 8);
  return d;
}

void write_digest(uint8_t* p, const ContentDigest& d) {
  write_le(p, d.lo, 8);
  write_le(p + 8, d.hi, 8);
}

}  // namespace

const char* parse_index(const uint8_t* data, size_t size, const ContentDigest& program,
                        const ContentDigest& environment, IndexFile* out) {
  if (size < kIndexHeaderBytes + 16) return "shorter than an index header";
  if (std::memcmp(data, kIndexMagic, 8) != 0) return "bad magic";
  if (read_le(data + 8, 4) != kWeightsIndexVersion) return "another index format version";
  const uint64_t n = read_le(data + 12, 4);
  if (n > (size - kIndexHeaderBytes - 16) / kIndexEntryBytes ||
      size != kIndexHeaderBytes + n * kIndexEntryBytes + 16) {
    return "size disagrees with the entry count (truncated?)";
  }
  const size_t body = size - 16;
  if (content_digest(data, body) != read_digest(data + body)) return "checksum mismatch (corrupt)";
  if (read_digest(data + 16) != program) return "written for another program";
  if (read_digest(data + 32) != environment) return "written for another CPU or XNNPACK build";
  out->program = program;
  out->environment = environment;
  out->entries.clear();
  out->entries.reserve(static_cast<size_t>(n));
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* p = data + kIndexHeaderBytes + i * kIndexEntryBytes;
    IndexEntry e;
    e.seed = static_cast<uint32_t>(read_le(p, 4));
    const uint32_t flags = static_cast<uint32_t>(read_le(p + 4, 4));
    if ((flags & ~1u) != 0) return "unknown entry flags";
    e.ambiguous = (flags & 1u) != 0;
    e.kernel_offset = read_le(p + 8, 8);
    e.bias_offset = read_le(p + 16, 8);
    e.size = read_le(p + 24, 8);
    if (e.size == 0 || e.size > kMaxBlockBytes) return "an entry's size is out of range";
    if (e.kernel_offset == kNoOffset) return "an entry has no kernel";
    e.block = read_digest(p + 32);
    out->entries.push_back(e);
  }
  // Keys are unique: sort a copy by key, compare neighbours (n log n, whatever n is).
  std::vector<IndexEntry> sorted = out->entries;
  auto key_less = [](const IndexEntry& a, const IndexEntry& b) {
    if (a.seed != b.seed) return a.seed < b.seed;
    if (a.kernel_offset != b.kernel_offset) return a.kernel_offset < b.kernel_offset;
    return a.bias_offset < b.bias_offset;
  };
  std::sort(sorted.begin(), sorted.end(), key_less);
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].same_key(sorted[i - 1].seed, sorted[i - 1].kernel_offset, sorted[i - 1].bias_offset)) {
      out->entries.clear();
      return "two entries share a key";
    }
  }
  return nullptr;
}

std::vector<uint8_t> encode_index(const IndexFile& index) {
  std::vector<uint8_t> out(kIndexHeaderBytes + index.entries.size() * kIndexEntryBytes + 16, 0);
  uint8_t* p = out.data();
  std::memcpy(p, kIndexMagic, 8);
  write_le(p + 8, kWeightsIndexVersion, 4);
  write_le(p + 12, index.entries.size(), 4);
  write_digest(p + 16, index.program);
  write_digest(p + 32, index.environment);
  for (size_t i = 0; i < index.entries.size(); ++i) {
    const IndexEntry& e = index.entries[i];
    uint8_t* q = p + kIndexHeaderBytes + i * kIndexEntryBytes;
    write_le(q, e.seed, 4);
    write_le(q + 4, e.ambiguous ? 1u : 0u, 4);
    write_le(q + 8, e.kernel_offset, 8);
    write_le(q + 16, e.bias_offset, 8);
    write_le(q + 24, e.size, 8);
    write_digest(q + 32, e.block);
  }
  const size_t body = out.size() - 16;
  write_digest(p + body, content_digest(p, body));
  return out;
}

void encode_block_header(const ContentDigest& digest, uint64_t size, uint8_t out[kBlockHeaderBytes]) {
  std::memset(out, 0, kBlockHeaderBytes);
  std::memcpy(out, kBlockMagic, 8);
  write_le(out + 8, kWeightsIndexVersion, 4);
  write_le(out + 16, size, 8);
  write_digest(out + 24, digest);
}

const char* check_block_header(const uint8_t* header, uint64_t file_size, const ContentDigest& digest,
                               uint64_t size) {
  if (file_size < kBlockHeaderBytes) return "shorter than a block header";
  if (std::memcmp(header, kBlockMagic, 8) != 0) return "bad magic";
  if (read_le(header + 8, 4) != kWeightsIndexVersion) return "another block format version";
  if (read_le(header + 16, 8) != size || file_size - kBlockHeaderBytes != size) {
    return "size disagrees with the index (truncated?)";
  }
  if (read_digest(header + 24) != digest) return "digest disagrees with the index";
  return nullptr;
}

}  // namespace xnnpack
}  // namespace ember
