// LeakSanitizer suppressions for tests that load a Vulkan driver, linked into those tests
// (LSan calls this hook when the binary is built with --config=asan; otherwise unused).
// Only third-party code whose leaks Ember cannot fix: Mesa's lavapipe driver (and the LLVM
// it JITs shaders with) keeps allocations past vkDestroyDevice/vkDestroyInstance, and the
// loader probes every installed ICD, so Mesa's hardware drivers (Intel, Radeon) are loaded
// even on a machine without that GPU and leak from their probe (seen in CI: 128 B realloc
// in libvulkan_intel.so).
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n"
         "leak:libvulkan_intel\n"
         "leak:libvulkan_radeon.so\n"
         "leak:libLLVM\n";
}
