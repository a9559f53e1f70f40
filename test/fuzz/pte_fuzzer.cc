// libFuzzer target: arbitrary bytes as a .pte program.
//
// Program::load(Full) must reject or accept; whatever it accepts must load its methods
// (with arenas sized from MethodMeta, capped), take zero inputs at their upper-bound shapes
// and execute — returning errors, never crashing, reading or writing out of bounds, or
// hitting undefined behaviour. Linked with the portable kernels so real kernels run.
// The harness is test/fuzz/pte_harness.h (shared with test/hardening's regression test).
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 pte_fuzzer (see docs/security.md).
#include "test/fuzz/pte_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ember::fuzz::run_pte_bytes(data, size);
  return 0;
}
