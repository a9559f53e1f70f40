// libFuzzer target: arbitrary bytes as a Vulkan pipeline cache file
// (delegates/vulkan/runtime/pipeline_cache_file.h), the file the Vulkan delegate reads from a
// cache directory before handing its contents to the driver.
//
// Each input is parsed twice: as given, and with its data digest recomputed so that mutations
// reach the driver-header checks. The identity asked for is the file's own (so well-formed
// inputs parse). Whatever parse accepts must lie inside the input and re-encode to the same
// bytes; never a crash, an out-of-bounds read or undefined behaviour.
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 vk_pipeline_cache_fuzzer
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "delegates/vulkan/runtime/pipeline_cache_file.h"
#include "runtime/core/content_digest.h"
#include "runtime/core/little_endian.h"

namespace {

using namespace ember;          // NOLINT
using namespace ember::vulkan;  // NOLINT

void check(const std::vector<uint8_t>& bytes) {
  PipelineCacheIdentity id;
  if (bytes.size() >= 40) {
    id.vendor_id = static_cast<uint32_t>(read_le(bytes.data() + 12, 4));
    id.device_id = static_cast<uint32_t>(read_le(bytes.data() + 16, 4));
    id.driver_version = static_cast<uint32_t>(read_le(bytes.data() + 20, 4));
    std::memcpy(id.cache_uuid, bytes.data() + 24, 16);
  }
  const char* reason = nullptr;
  Span<const uint8_t> data = parse_pipeline_cache_file(bytes.data(), bytes.size(), id, &reason);
  if (reason == nullptr) std::abort();  // every outcome says why
  if (data.size() == 0) {
    if (reason[0] == '\0') std::abort();
    return;
  }
  if (data.data() < bytes.data() || data.data() + data.size() > bytes.data() + bytes.size()) std::abort();
  if (encode_pipeline_cache_file(data.data(), data.size(), id) != bytes) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  check(bytes);
  if (size >= kPipelineCacheFileHeader) {
    write_le(bytes.data() + 40, size - kPipelineCacheFileHeader, 8);
    const ContentDigest d = content_digest(bytes.data() + kPipelineCacheFileHeader, size - kPipelineCacheFileHeader);
    write_le(bytes.data() + 48, d.lo, 8);
    write_le(bytes.data() + 56, d.hi, 8);
    check(bytes);
  }
  return 0;
}
