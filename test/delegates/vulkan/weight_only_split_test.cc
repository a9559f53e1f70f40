// weight_only_split.h: the work split linear_wq.comp gets for the shapes a 1.1B Llama decodes
// with, and the environment's overrides. No Vulkan device needed.
#include "delegates/vulkan/runtime/weight_only_split.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace ember {
namespace vulkan {
namespace {

TEST(WeightOnlySplitTest, DecodeAndPrefillShapesInt4) {
  // K = 2048, int4 with a scale per 32: 256 words a row; 64 invocations of 4 words cover it; 2048
  // outputs: 2 rows a group; words, not quads.
  WeightOnlySplit s = weight_only_split(1, 2048, 2048, 4, 32, 1024);
  EXPECT_EQ(s.threads, 64);
  EXPECT_FALSE(s.quads);
  EXPECT_EQ(s.units, 4);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.workgroup, 128u);
  // K = 5632 (the down projection): 704 words; the whole workgroup of 128, 6 words each.
  s = weight_only_split(1, 2048, 5632, 4, 32, 1024);
  EXPECT_EQ(s.threads, 128);
  EXPECT_EQ(s.units, 6);
  // The head: 8 rows a group; a prefill: 8 everywhere; few outputs: 1.
  EXPECT_EQ(weight_only_split(1, 32000, 2048, 4, 32, 1024).rows, 8);
  EXPECT_EQ(weight_only_split(64, 2048, 2048, 4, 32, 1024).rows, 8);
  EXPECT_EQ(weight_only_split(1, 100, 2048, 4, 32, 1024).rows, 1);
  // A short row: one group of 32 with a word each; a very long one: capped at 8 words a chunk.
  s = weight_only_split(1, 100, 160, 4, 32, 1024);
  EXPECT_EQ(s.threads, 32);
  EXPECT_EQ(s.units, 1);
  EXPECT_EQ(weight_only_split(1, 100, 32768, 4, 32, 1024).units, 8);
  // A device with 64-invocation workgroups.
  s = weight_only_split(1, 2048, 5632, 4, 32, 64);
  EXPECT_EQ(s.workgroup, 64u);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.units, 8);
}

TEST(WeightOnlySplitTest, Int8TakesQuadsWhereTheyFit) {
  // K = 2048 int8, a scale per row: 512 words, 128 quads; 128 invocations of one quad.
  WeightOnlySplit s = weight_only_split(1, 2048, 2048, 8, 2048, 1024);
  EXPECT_TRUE(s.quads);
  EXPECT_EQ(s.threads, 128);
  EXPECT_EQ(s.units, 1);
  // K = 5632: 1408 words, 352 quads over 128 invocations: 3, capped at MAX_XQ = 2.
  s = weight_only_split(1, 2048, 5632, 8, 5632, 1024);
  EXPECT_TRUE(s.quads);
  EXPECT_EQ(s.units, 2);
  // A scale per 8 values (2 words: a quad would need two); rows of 30 words: words.
  s = weight_only_split(1, 100, 2048, 8, 8, 1024);
  EXPECT_FALSE(s.quads);
  EXPECT_EQ(s.units, 4);
  s = weight_only_split(1, 100, 120, 8, 120, 1024);
  EXPECT_FALSE(s.quads);
  EXPECT_EQ(s.threads, 32);
  EXPECT_EQ(s.units, 1);
}

TEST(WeightOnlySplitTest, EnvironmentForcesASplit) {
  setenv("EMBER_VULKAN_WQ_THREADS", "16", 1);
  setenv("EMBER_VULKAN_WQ_ROWS", "3", 1);
  setenv("EMBER_VULKAN_WQ_WG", "64", 1);
  WeightOnlySplit s = weight_only_split(1, 2048, 2048, 4, 32, 1024);
  EXPECT_EQ(s.threads, 16);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.workgroup, 64u);
  EXPECT_EQ(s.units, 8);  // 256 words over 16 invocations: 16, capped at MAX_XW
  setenv("EMBER_VULKAN_WQ_QUADS", "1", 1);
  s = weight_only_split(1, 2048, 2048, 4, 32, 1024);
  EXPECT_TRUE(s.quads);
  EXPECT_EQ(s.units, 2);  // 64 quads over 16 invocations: 4, capped at MAX_XQ
  EXPECT_FALSE(weight_only_split(1, 100, 120, 8, 120, 1024).quads);  // forced where quads do not fit
  setenv("EMBER_VULKAN_WQ_QUADS", "0", 1);
  EXPECT_FALSE(weight_only_split(1, 2048, 2048, 8, 2048, 1024).quads);
  setenv("EMBER_VULKAN_WQ_THREADS", "48", 1);  // not a power of two: ignored
  setenv("EMBER_VULKAN_WQ_ROWS", "9", 1);      // above MAX_ROWS: ignored
  setenv("EMBER_VULKAN_WQ_WG", "256", 1);      // above the shader's MAX_WG: ignored
  s = weight_only_split(1, 2048, 2048, 4, 32, 1024);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.workgroup, 128u);
  for (const char* v : {"EMBER_VULKAN_WQ_THREADS", "EMBER_VULKAN_WQ_ROWS", "EMBER_VULKAN_WQ_WG", "EMBER_VULKAN_WQ_QUADS"})
    unsetenv(v);
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
