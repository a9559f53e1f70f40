// libFuzzer target: arbitrary bytes as a .pte program.
//
// Program::load(Full) must reject or accept; whatever it accepts must load its methods
// (with arenas sized from MethodMeta, capped), take zero inputs at their upper-bound shapes
// and execute — returning errors, never crashing, reading or writing out of bounds, or
// hitting undefined behaviour. Linked with the portable kernels so real kernels run, and with
// the QNN backend's blob checks.
// The harness is test/fuzz/pte_harness.h (shared with test/hardening's regression test).
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 pte_fuzzer (see docs/security.md).
#include <cstdlib>

#include "test/fuzz/pte_harness.h"

// Linked with the QNN backend (tools/fuzz/build_fuzzers.sh): programs with QNN delegates have
// their blobs verified and their tensor descriptions checked; the library path points nowhere,
// so init stops there cleanly and Qualcomm's own code (not ours to fuzz) never runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("EMBER_QNN_LIBRARY", "/nonexistent/ember-fuzz/libQnnHtp.so", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ember::fuzz::run_pte_bytes(data, size);
  return 0;
}
