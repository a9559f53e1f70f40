// Turning VkResult codes into Ember errors with a message.
#pragma once

#include <vulkan/vulkan.h>

#include "runtime/core/error.h"
#include "runtime/platform/diagnostic.h"

namespace ember {
namespace vulkan {

const char* vk_result_name(VkResult r);

// Out-of-memory results become Error::OutOfMemory, everything else BackendFailed.
Error vk_fail(Diagnostic* diag, VkResult r, const char* what);

}  // namespace vulkan
}  // namespace ember

// Returns the mapped Error from the current function when a Vulkan call fails.
#define EMBER_VK_TRY(diag, call, what)                                  \
  do {                                                                  \
    VkResult ember_vk_r_ = (call);                                      \
    if (ember_vk_r_ != VK_SUCCESS) {                                    \
      return ::ember::vulkan::vk_fail((diag), ember_vk_r_, (what));     \
    }                                                                   \
  } while (0)
