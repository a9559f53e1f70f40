// weight_only_split.h: the work split linear_wq.comp gets for the shapes a 1.1B Llama decodes
// with, and when the 16-byte loads apply. No Vulkan device needed.
#include "delegates/vulkan/runtime/weight_only_split.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace ember {
namespace vulkan {
namespace {

TEST(WeightOnlySplitTest, SixteenByteUnitsWhereRowsAndGroupsHoldWholeUnits) {
  // int4, K = 2048, group 32: 256 words a row, 4 a group: 32 invocations of 2 units cover a row.
  WeightOnlySplit s = weight_only_split(1, 2048, 256, 4, 1024);
  EXPECT_TRUE(s.vec);
  EXPECT_EQ(s.threads, 32);
  EXPECT_EQ(s.words, 2);
  EXPECT_EQ(s.rows, 2);
  EXPECT_EQ(s.workgroup, 128u);
  // K = 5632 (the down projection): 176 units; 128 invocations hold 2 units each at most.
  s = weight_only_split(1, 2048, 704, 4, 1024);
  EXPECT_TRUE(s.vec);
  EXPECT_EQ(s.threads, 128);
  EXPECT_EQ(s.words, 2);
  // The head: 8 rows per group; a prefill: 8 rows everywhere.
  EXPECT_EQ(weight_only_split(1, 32000, 256, 4, 1024).rows, 8);
  EXPECT_EQ(weight_only_split(64, 2048, 256, 4, 1024).rows, 8);
  // A group of 2 words (int4 g16) or a row of 250 words: 32-bit words, at most 4 an invocation.
  s = weight_only_split(1, 100, 256, 2, 1024);
  EXPECT_FALSE(s.vec);
  EXPECT_EQ(s.threads, 64);
  EXPECT_EQ(s.words, 4);
  EXPECT_FALSE(weight_only_split(1, 100, 250, 250, 1024).vec);
  // A device with 64-invocation workgroups.
  EXPECT_EQ(weight_only_split(1, 2048, 704, 4, 64).threads, 64);
  EXPECT_EQ(weight_only_split(1, 2048, 704, 4, 64).words, 2);
}

TEST(WeightOnlySplitTest, EnvironmentForcesASplit) {
  setenv("EMBER_VULKAN_WQ_VEC", "0", 1);
  setenv("EMBER_VULKAN_WQ_THREADS", "16", 1);
  setenv("EMBER_VULKAN_WQ_ROWS", "3", 1);
  const WeightOnlySplit s = weight_only_split(1, 2048, 256, 4, 1024);
  EXPECT_FALSE(s.vec);
  EXPECT_EQ(s.threads, 16);
  EXPECT_EQ(s.rows, 3);
  EXPECT_EQ(s.words, 8);  // 256 words over 16 invocations: 16, capped at MAX_XW
  setenv("EMBER_VULKAN_WQ_THREADS", "48", 1);  // not a power of two: ignored
  setenv("EMBER_VULKAN_WQ_ROWS", "9", 1);      // above MAX_ROWS: ignored
  EXPECT_EQ(weight_only_split(1, 2048, 256, 4, 1024).threads, 64);
  EXPECT_EQ(weight_only_split(1, 2048, 256, 4, 1024).rows, 2);
  for (const char* v : {"EMBER_VULKAN_WQ_VEC", "EMBER_VULKAN_WQ_THREADS", "EMBER_VULKAN_WQ_ROWS"}) unsetenv(v);
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
