// The Vulkan pipeline cache on a real device (lavapipe in CI; skips without one): pipelines
// created together on several threads, the driver cache written to its file and read back by
// the next cache (a second process's first load), a damaged file ignored and rewritten, and
// persistence turned off. Pipeline caches here are fresh objects on the process's device, as
// a new process would have.
#include "delegates/vulkan/runtime/pipeline_cache.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "delegates/vulkan/runtime/vulkan_context.h"
#include "test/delegates/vulkan/vulkan_test_util.h"

namespace ember {
namespace vulkan {
namespace {

std::vector<uint8_t> read_all(const std::string& path) {
  std::vector<uint8_t> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

void write_all(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Ten distinct pipelines of two small shaders.
std::vector<PipelineKey> some_keys() {
  std::vector<PipelineKey> keys;
  for (uint32_t op = 0; op < 6; ++op) keys.push_back(PipelineKey{ShaderId::Unary, {op, 0, 0}, kWorkgroupSize});
  for (uint32_t op = 0; op < 4; ++op) {
    keys.push_back(PipelineKey{ShaderId::Binary, {op, float_bits(1.0f)}, kWorkgroupSize});
  }
  return keys;
}

class PipelineCacheOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    EMBER_SKIP_WITHOUT_VULKAN();
    Diagnostic diag;
    Result<VulkanContext*> ctx = VulkanContext::get(/*allow_cpu=*/true, &diag);
    ASSERT_TRUE(ctx.ok()) << diag.text();
    context_ = *ctx;
    const VkPhysicalDeviceProperties& p = context_->properties();
    identity_.vendor_id = p.vendorID;
    identity_.device_id = p.deviceID;
    identity_.driver_version = p.driverVersion;
    std::memcpy(identity_.cache_uuid, p.pipelineCacheUUID, 16);
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/vk_pipeline_cache_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    PipelineCache::set_directory(dir_);
    file_ = dir_ + "/" + pipeline_cache_file_name(identity_);
    std::remove(file_.c_str());
  }
  void TearDown() override { PipelineCache::set_directory(""); }

  std::unique_ptr<PipelineCache> fresh_cache() {
    auto c = std::make_unique<PipelineCache>();
    c->attach(context_->device(), identity_);
    return c;
  }

  VulkanContext* context_ = nullptr;
  PipelineCacheIdentity identity_;
  std::string dir_, file_;
};

TEST_F(PipelineCacheOnDevice, PrepareCreatesEachPipelineOnceAndPipelineFindsThem) {
  auto cache = fresh_cache();
  Diagnostic diag;
  std::vector<PipelineKey> keys = some_keys();
  keys.push_back(keys[3]);  // a duplicate is created once
  ASSERT_EQ(cache->prepare(keys, &diag), Error::Ok) << diag.text();
  EXPECT_EQ(cache->stats().created, 10u);
  EXPECT_EQ(cache->num_pipelines(), 10u);
  for (const PipelineKey& k : some_keys()) {
    Result<VkPipeline> p = cache->pipeline(k.shader, k.spec, k.workgroup_size, &diag);
    ASSERT_TRUE(p.ok()) << diag.text();
    EXPECT_NE(*p, VK_NULL_HANDLE);
  }
  EXPECT_EQ(cache->stats().created, 10u);  // all found, none created again
  ASSERT_EQ(cache->prepare(some_keys(), &diag), Error::Ok);
  EXPECT_EQ(cache->stats().created, 10u);
}

TEST_F(PipelineCacheOnDevice, TheNextCacheLoadsTheSavedFile) {
  Diagnostic diag;
  {
    auto first = fresh_cache();
    ASSERT_EQ(first->prepare(some_keys(), &diag), Error::Ok) << diag.text();
    PipelineCacheStats st = first->stats();
    EXPECT_EQ(st.file, file_);
    EXPECT_EQ(st.load_status, "no file yet");
    first->save();
    st = first->stats();
    EXPECT_EQ(st.save_status.rfind("saved ", 0), 0u) << st.save_status;
  }
  const std::vector<uint8_t> file = read_all(file_);
  const char* reason = "";
  Span<const uint8_t> data = parse_pipeline_cache_file(file.data(), file.size(), identity_, &reason);
  ASSERT_GT(data.size(), 0u) << "the saved file does not parse: " << reason;

  auto second = fresh_cache();
  ASSERT_EQ(second->prepare(some_keys(), &diag), Error::Ok) << diag.text();
  PipelineCacheStats st = second->stats();
  EXPECT_EQ(st.load_status, "loaded " + std::to_string(data.size()) + " bytes");
  EXPECT_EQ(st.loaded_bytes, data.size());
}

TEST_F(PipelineCacheOnDevice, ADamagedFileIsIgnoredAndRewritten) {
  Diagnostic diag;
  {
    auto first = fresh_cache();
    ASSERT_EQ(first->prepare(some_keys(), &diag), Error::Ok) << diag.text();
    first->save();
  }
  std::vector<uint8_t> file = read_all(file_);
  ASSERT_GT(file.size(), kPipelineCacheFileHeader);
  file.back() ^= 0x5a;  // one bit pattern changed in the driver's data
  write_all(file_, file);

  auto second = fresh_cache();
  ASSERT_EQ(second->prepare(some_keys(), &diag), Error::Ok) << diag.text();
  EXPECT_EQ(second->stats().load_status, "ignored: data digest mismatch (corrupt or truncated)");
  EXPECT_EQ(second->stats().loaded_bytes, 0u);
  second->save();
  const std::vector<uint8_t> rewritten = read_all(file_);
  const char* reason = "";
  EXPECT_GT(parse_pipeline_cache_file(rewritten.data(), rewritten.size(), identity_, &reason).size(), 0u) << reason;

  write_all(file_, {1, 2, 3});  // not a cache file at all
  auto third = fresh_cache();
  ASSERT_EQ(third->prepare(some_keys(), &diag), Error::Ok) << diag.text();
  EXPECT_EQ(third->stats().load_status, "ignored: shorter than its 64-byte header");
}

TEST_F(PipelineCacheOnDevice, OffMeansNoFile) {
  PipelineCache::set_directory("off");
  EXPECT_EQ(PipelineCache::directory(), "");
  auto cache = fresh_cache();
  Diagnostic diag;
  ASSERT_EQ(cache->prepare(some_keys(), &diag), Error::Ok) << diag.text();
  cache->save();
  EXPECT_EQ(cache->stats().load_status, "off");
  EXPECT_EQ(cache->stats().file, "");
  EXPECT_EQ(cache->stats().save_status, "");
  EXPECT_TRUE(read_all(file_).empty());
}

TEST_F(PipelineCacheOnDevice, AnUnwritableDirectoryLosesOnlyTheFile) {
  PipelineCache::set_directory("/proc/ember-no-such-dir");
  auto cache = fresh_cache();
  Diagnostic diag;
  ASSERT_EQ(cache->prepare(some_keys(), &diag), Error::Ok) << diag.text();
  cache->save();
  EXPECT_EQ(cache->stats().load_status, "no file yet");
  EXPECT_EQ(cache->stats().save_status, "not saved: cannot create the cache directory");
  EXPECT_EQ(cache->num_pipelines(), 10u);
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
