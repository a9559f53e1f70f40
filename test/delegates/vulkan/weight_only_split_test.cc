// weight_only_split.h: the work split linear_wq.comp gets for the shapes a 1.1B Llama decodes
// with (int4: 8 values a word), and the environment's overrides. No Vulkan device needed.
#include "delegates/vulkan/runtime/weight_only_split.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace ember {
namespace vulkan {
namespace {

TEST(WeightOnlySplitTest, DecodeAndPrefillShapes) {
  // K = 2048: 256 words a row; 64 invocations of 4 words cover it; 2048 outputs: 2 rows a group.
  WeightOnlySplit s = weight_only_split(1, 2048, 256, 1024);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.words, 4);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.workgroup, 128u);
  // K = 5632 (the down projection): 704 words; the whole workgroup of 128, 6 words each.
  s = weight_only_split(1, 2048, 704, 1024);
  EXPECT_EQ(s.threads, 128);
  EXPECT_EQ(s.words, 6);
  // The head: 8 rows a group; a prefill: 8 everywhere; few outputs: 1.
  EXPECT_EQ(weight_only_split(1, 32000, 256, 1024).rows, 8);
  EXPECT_EQ(weight_only_split(64, 2048, 256, 1024).rows, 8);
  EXPECT_EQ(weight_only_split(1, 100, 256, 1024).rows, 1);
  // A short row: one group of 32 with a word each; a very long one: capped at 8 words a chunk.
  s = weight_only_split(1, 100, 20, 1024);
  EXPECT_EQ(s.threads, 32);
  EXPECT_EQ(s.words, 1);
  EXPECT_EQ(weight_only_split(1, 100, 4096, 1024).words, 8);
  // A device with 64-invocation workgroups.
  s = weight_only_split(1, 2048, 704, 64);
  EXPECT_EQ(s.workgroup, 64u);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.words, 8);
}

TEST(WeightOnlySplitTest, EnvironmentForcesASplit) {
  setenv("EMBER_VULKAN_WQ_THREADS", "16", 1);
  setenv("EMBER_VULKAN_WQ_ROWS", "3", 1);
  setenv("EMBER_VULKAN_WQ_WG", "64", 1);
  WeightOnlySplit s = weight_only_split(1, 2048, 256, 1024);
  EXPECT_EQ(s.threads, 16);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.workgroup, 64u);
  EXPECT_EQ(s.words, 8);  // 256 words over 16 invocations: 16, capped at MAX_XW
  setenv("EMBER_VULKAN_WQ_THREADS", "48", 1);  // not a power of two: ignored
  setenv("EMBER_VULKAN_WQ_ROWS", "9", 1);      // above MAX_ROWS: ignored
  setenv("EMBER_VULKAN_WQ_WG", "256", 1);      // above the shader's MAX_WG: ignored
  s = weight_only_split(1, 2048, 256, 1024);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.workgroup, 128u);
  for (const char* v : {"EMBER_VULKAN_WQ_THREADS", "EMBER_VULKAN_WQ_ROWS", "EMBER_VULKAN_WQ_WG"}) unsetenv(v);
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
