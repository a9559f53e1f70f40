#include "delegates/vulkan/runtime/pipeline_cache_file.h"

#include <cstdio>
#include <cstring>

#include "runtime/core/content_digest.h"
#include "runtime/core/little_endian.h"

namespace ember {
namespace vulkan {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'V', 'K', 'P', 'C'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kDriverHeaderBytes = 32;  // VkPipelineCacheHeaderVersionOne

Span<const uint8_t> fail(const char** reason, const char* why) {
  *reason = why;
  return {};
}

}  // namespace

std::string pipeline_cache_file_name(const PipelineCacheIdentity& id) {
  char head[64];
  std::snprintf(head, sizeof(head), "vk-pipelines-%08x-%08x-%08x-", id.vendor_id, id.device_id, id.driver_version);
  std::string name = head;
  for (uint8_t b : id.cache_uuid) {
    char hex[3];
    std::snprintf(hex, sizeof(hex), "%02x", b);
    name += hex;
  }
  return name + ".bin";
}

Span<const uint8_t> parse_pipeline_cache_file(const uint8_t* file, size_t size, const PipelineCacheIdentity& id,
                                              const char** reason) {
  if (size < kPipelineCacheFileHeader) return fail(reason, "shorter than its 64-byte header");
  if (std::memcmp(file, kMagic, sizeof(kMagic)) != 0) return fail(reason, "not an Ember pipeline cache (magic)");
  if (read_le(file + 8, 4) != kFormatVersion) return fail(reason, "another format version");
  if (read_le(file + 12, 4) != id.vendor_id || read_le(file + 16, 4) != id.device_id ||
      read_le(file + 20, 4) != id.driver_version || std::memcmp(file + 24, id.cache_uuid, 16) != 0) {
    return fail(reason, "made by another device or driver");
  }
  const uint64_t data_bytes = read_le(file + 40, 8);
  if (data_bytes > kMaxPipelineCacheData) return fail(reason, "data larger than the 256 MiB limit");
  if (data_bytes != size - kPipelineCacheFileHeader) return fail(reason, "data size disagrees with the file size");
  const uint8_t* data = file + kPipelineCacheFileHeader;
  const ContentDigest want{read_le(file + 48, 8), read_le(file + 56, 8)};
  if (content_digest(data, data_bytes) != want) return fail(reason, "data digest mismatch (corrupt or truncated)");
  if (data_bytes < kDriverHeaderBytes) return fail(reason, "driver data shorter than its header");
  const uint64_t header_bytes = read_le(data, 4);
  if (header_bytes < kDriverHeaderBytes || header_bytes > data_bytes) return fail(reason, "driver header size out of range");
  if (read_le(data + 4, 4) != 1) return fail(reason, "driver header version is not 1");
  if (read_le(data + 8, 4) != id.vendor_id || read_le(data + 12, 4) != id.device_id ||
      std::memcmp(data + 16, id.cache_uuid, 16) != 0) {
    return fail(reason, "driver data made by another device");
  }
  *reason = "";
  return Span<const uint8_t>(data, static_cast<size_t>(data_bytes));
}

std::vector<uint8_t> encode_pipeline_cache_file(const uint8_t* data, size_t size, const PipelineCacheIdentity& id) {
  std::vector<uint8_t> out(kPipelineCacheFileHeader + size, 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  write_le(out.data() + 8, kFormatVersion, 4);
  write_le(out.data() + 12, id.vendor_id, 4);
  write_le(out.data() + 16, id.device_id, 4);
  write_le(out.data() + 20, id.driver_version, 4);
  std::memcpy(out.data() + 24, id.cache_uuid, 16);
  write_le(out.data() + 40, size, 8);
  const ContentDigest d = content_digest(data, size);
  write_le(out.data() + 48, d.lo, 8);
  write_le(out.data() + 56, d.hi, 8);
  if (size > 0) std::memcpy(out.data() + kPipelineCacheFileHeader, data, size);
  return out;
}

}  // namespace vulkan
}  // namespace ember
