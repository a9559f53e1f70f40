// LeakSanitizer support for tests that load a Vulkan driver, linked into those tests (used
// when the binary is built with --config=asan; otherwise the hook is never called and the
// pinning below is compiled out).
//
// Only third-party code whose leaks Ember cannot fix: Mesa's lavapipe driver (and the LLVM
// it JITs shaders with) keeps allocations past vkDestroyDevice/vkDestroyInstance. The loader
// dlcloses the driver and its implicit layers when the instance goes, so by the time LSan
// reports at exit their frames belong to no module ("<unknown module>": seen in CI, 128 B
// from a pthread_once initialiser) and no suppression can name them. Pinning the libraries
// (RTLD_NODELETE) keeps them mapped, so their leaks are attributed and suppressed below.
// .bazelrc also restricts ASan test runs to lavapipe's ICD, so Mesa's hardware drivers
// (probed and unloaded on machines without that GPU) are not loaded at all.
#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>

#include <initializer_list>

namespace {
const bool kMesaVulkanPinned = [] {
  for (const char* lib : {"libvulkan_lvp.so", "libVkLayer_MESA_device_select.so"}) {
    dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE);  // absent: nothing to pin
  }
  return true;
}();
}  // namespace
#endif

extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n"
         "leak:libVkLayer_MESA_device_select.so\n"
         "leak:libvulkan_intel\n"
         "leak:libvulkan_radeon.so\n"
         "leak:libLLVM\n";
}
