// tuning_env.h: how the delegate reads its EMBER_VULKAN_* tuning overrides. No device needed.
#include "delegates/vulkan/runtime/tuning_env.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace ember {
namespace vulkan {
namespace {

constexpr const char* kName = "EMBER_VULKAN_TUNING_ENV_TEST";

TEST(TuningEnvTest, ChoiceIsForcedOnlyByZeroOrOne) {
  unsetenv(kName);
  EXPECT_TRUE(tuning_choice(kName, true));
  EXPECT_FALSE(tuning_choice(kName, false));
  setenv(kName, "1", 1);
  EXPECT_TRUE(tuning_choice(kName, false));
  setenv(kName, "0", 1);
  EXPECT_FALSE(tuning_choice(kName, true));
  for (const char* other : {"", "yes", "10", "01", "2"}) {
    setenv(kName, other, 1);
    EXPECT_TRUE(tuning_choice(kName, true)) << other;
    EXPECT_FALSE(tuning_choice(kName, false)) << other;
  }
  unsetenv(kName);
}

TEST(TuningEnvTest, NumberIsZeroUnlessSet) {
  unsetenv(kName);
  EXPECT_EQ(tuning_number(kName), 0);
  setenv(kName, "512", 1);
  EXPECT_EQ(tuning_number(kName), 512);
  setenv(kName, "-3", 1);
  EXPECT_EQ(tuning_number(kName), -3);
  setenv(kName, "wide", 1);
  EXPECT_EQ(tuning_number(kName), 0);
  unsetenv(kName);
}

}  // namespace
}  // namespace vulkan
}  // namespace ember
