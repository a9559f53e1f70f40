// The on-disk form of the Vulkan driver's pipeline cache (vkGetPipelineCacheData), which the
// delegate keeps between runs so a second load of a program skips shader compilation.
// Pure functions over bytes (no Vulkan calls), so the format is fuzzed on its own
// (test/fuzz/vk_pipeline_cache_fuzzer.cc).
//
// A cache file is only as trustworthy as the directory it sits in, and drivers do not all
// validate what they are given, so a file is used only when every check passes; otherwise
// the delegate starts with an empty cache and overwrites the file. Layout (little-endian):
//   offset size
//    0      8   magic "EMBRVKPC"
//    8      4   format version (1)
//   12      4   vendor id      } the device and driver the data was made by
//   16      4   device id      } (VkPhysicalDeviceProperties); a file made by another
//   20      4   driver version } device or driver is ignored
//   24     16   pipelineCacheUUID
//   40      8   data bytes (at most kMaxPipelineCacheData)
//   48     16   content digest of the data (runtime/core/content_digest.h)
//   64      .   the driver's data, which starts with its own VkPipelineCacheHeaderVersionOne
//               (header size >= 32, version 1, vendor id, device id, pipelineCacheUUID):
//               checked against the same identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/span.h"

namespace ember {
namespace vulkan {

constexpr size_t kPipelineCacheFileHeader = 64;
constexpr size_t kMaxPipelineCacheData = size_t{256} << 20;

struct PipelineCacheIdentity {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t cache_uuid[16] = {0};
};

// "vk-pipelines-<vendor>-<device>-<driver version>-<uuid>.bin", all hex: one file per device
// and driver, so a driver update starts a new file instead of fighting over one.
std::string pipeline_cache_file_name(const PipelineCacheIdentity& id);

// The driver's data inside `file` when every check passes (a view into `file`); otherwise an
// empty span and *reason (static storage) says which check failed.
Span<const uint8_t> parse_pipeline_cache_file(const uint8_t* file, size_t size, const PipelineCacheIdentity& id,
                                              const char** reason);

// A file holding `data` (which must be at most kMaxPipelineCacheData bytes).
std::vector<uint8_t> encode_pipeline_cache_file(const uint8_t* data, size_t size, const PipelineCacheIdentity& id);

}  // namespace vulkan
}  // namespace ember
