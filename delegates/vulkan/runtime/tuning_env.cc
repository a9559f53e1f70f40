#include "delegates/vulkan/runtime/tuning_env.h"

#include <cstdlib>

namespace ember {
namespace vulkan {

bool tuning_choice(const char* name, bool heuristic) {
  const char* env = std::getenv(name);
  if (env != nullptr && (env[0] == '0' || env[0] == '1') && env[1] == '\0') return env[0] == '1';
  return heuristic;
}

long tuning_number(const char* name) {
  const char* env = std::getenv(name);
  return env == nullptr ? 0L : std::strtol(env, nullptr, 10);
}

}  // namespace vulkan
}  // namespace ember
