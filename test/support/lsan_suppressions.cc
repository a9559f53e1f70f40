// LeakSanitizer suppressions for tests that load a Vulkan driver, linked into those tests
// (LSan calls this hook when the binary is built with --config=asan; otherwise unused).
// Only third-party code whose leaks Ember cannot fix: Mesa's lavapipe driver (and the LLVM
// it JITs shaders with) keeps allocations past vkDestroyDevice/vkDestroyInstance.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n"
         "leak:libLLVM\n";
}
