// The Vulkan pipeline cache's file format (delegates/vulkan/runtime/pipeline_cache_file.h):
// what encode writes parses back, and every damaged, truncated or foreign file is refused
// with its reason. No Vulkan device needed.
#include "delegates/vulkan/runtime/pipeline_cache_file.h"

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/core/little_endian.h"

namespace ember {
namespace vulkan {
namespace {

PipelineCacheIdentity identity() {
  PipelineCacheIdentity id;
  id.vendor_id = 0x10de;
  id.device_id = 0x2330;
  id.driver_version = 0x8a0c4000;
  for (int i = 0; i < 16; ++i) id.cache_uuid[i] = static_cast<uint8_t>(0xa0 + i);
  return id;
}

// Driver data as a driver writes it: VkPipelineCacheHeaderVersionOne, then `payload` bytes.
std::vector<uint8_t> driver_data(const PipelineCacheIdentity& id, size_t payload) {
  std::vector<uint8_t> d(32 + payload);
  write_le(d.data(), 32, 4);
  write_le(d.data() + 4, 1, 4);
  write_le(d.data() + 8, id.vendor_id, 4);
  write_le(d.data() + 12, id.device_id, 4);
  std::memcpy(d.data() + 16, id.cache_uuid, 16);
  for (size_t i = 0; i < payload; ++i) d[32 + i] = static_cast<uint8_t>(i * 7 + 3);
  return d;
}

std::string reason_of(const std::vector<uint8_t>& file, const PipelineCacheIdentity& id) {
  const char* reason = "unset";
  Span<const uint8_t> data = parse_pipeline_cache_file(file.data(), file.size(), id, &reason);
  if (data.size() > 0) return "";
  return reason;
}

TEST(PipelineCacheFile, RoundTripsTheDriverData) {
  const PipelineCacheIdentity id = identity();
  const std::vector<uint8_t> data = driver_data(id, 1000);
  const std::vector<uint8_t> file = encode_pipeline_cache_file(data.data(), data.size(), id);
  ASSERT_EQ(file.size(), kPipelineCacheFileHeader + data.size());
  const char* reason = "unset";
  Span<const uint8_t> got = parse_pipeline_cache_file(file.data(), file.size(), id, &reason);
  ASSERT_EQ(got.size(), data.size()) << reason;
  EXPECT_EQ(std::memcmp(got.data(), data.data(), data.size()), 0);
  EXPECT_STREQ(reason, "");
}

TEST(PipelineCacheFile, NameSaysDeviceDriverAndUuid) {
  EXPECT_EQ(pipeline_cache_file_name(identity()),
            "vk-pipelines-000010de-00002330-8a0c4000-a0a1a2a3a4a5a6a7a8a9aaabacadaeaf.bin");
}

TEST(PipelineCacheFile, EveryTruncationIsRefused) {
  const PipelineCacheIdentity id = identity();
  const std::vector<uint8_t> data = driver_data(id, 40);
  const std::vector<uint8_t> file = encode_pipeline_cache_file(data.data(), data.size(), id);
  for (size_t n = 0; n < file.size(); ++n) {
    std::vector<uint8_t> cut(file.begin(), file.begin() + static_cast<long>(n));
    EXPECT_NE(reason_of(cut, id), "") << "accepted the first " << n << " bytes";
  }
  std::vector<uint8_t> longer = file;
  longer.push_back(0);
  EXPECT_EQ(reason_of(longer, id), "data size disagrees with the file size");
}

TEST(PipelineCacheFile, EveryChangedByteIsRefused) {
  const PipelineCacheIdentity id = identity();
  const std::vector<uint8_t> data = driver_data(id, 40);
  const std::vector<uint8_t> file = encode_pipeline_cache_file(data.data(), data.size(), id);
  for (size_t i = 0; i < file.size(); ++i) {
    std::vector<uint8_t> bad = file;
    bad[i] ^= 0x40;
    EXPECT_NE(reason_of(bad, id), "") << "accepted a change at byte " << i;
  }
}

TEST(PipelineCacheFile, AnotherDeviceOrDriverIsRefused) {
  const PipelineCacheIdentity id = identity();
  const std::vector<uint8_t> data = driver_data(id, 8);
  const std::vector<uint8_t> file = encode_pipeline_cache_file(data.data(), data.size(), id);
  PipelineCacheIdentity other = id;
  other.driver_version += 1;  // a driver update
  EXPECT_EQ(reason_of(file, other), "made by another device or driver");
  other = id;
  other.cache_uuid[15] ^= 1;
  EXPECT_EQ(reason_of(file, other), "made by another device or driver");
}

TEST(PipelineCacheFile, DriverDataIsCheckedToo) {
  const PipelineCacheIdentity id = identity();
  // Well-formed files (right digest) around driver data that is not for this device.
  PipelineCacheIdentity other = id;
  other.device_id = 0x1234;
  std::vector<uint8_t> data = driver_data(other, 8);
  EXPECT_EQ(reason_of(encode_pipeline_cache_file(data.data(), data.size(), id), id),
            "driver data made by another device");
  data = driver_data(id, 8);
  write_le(data.data() + 4, 2, 4);
  EXPECT_EQ(reason_of(encode_pipeline_cache_file(data.data(), data.size(), id), id),
            "driver header version is not 1");
  data = driver_data(id, 8);
  write_le(data.data(), 41, 4);  // header longer than the data
  EXPECT_EQ(reason_of(encode_pipeline_cache_file(data.data(), data.size(), id), id),
            "driver header size out of range");
  data.assign(16, 0);
  EXPECT_EQ(reason_of(encode_pipeline_cache_file(data.data(), data.size(), id), id),
            "driver data shorter than its header");
}

TEST(PipelineCacheFile, OversizedDataIsRefusedBeforeItIsRead) {
  const PipelineCacheIdentity id = identity();
  const std::vector<uint8_t> data = driver_data(id, 8);
  std::vector<uint8_t> file = encode_pipeline_cache_file(data.data(), data.size(), id);
  write_le(file.data() + 40, uint64_t{kMaxPipelineCacheData} + 1, 8);
  EXPECT_EQ(reason_of(file, id), "data larger than the 256 MiB limit");
  write_le(file.data() + 40, ~uint64_t{0}, 8);
  EXPECT_EQ(reason_of(file, id), "data larger than the 256 MiB limit");
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
