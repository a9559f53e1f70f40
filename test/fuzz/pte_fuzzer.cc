// libFuzzer target: arbitrary bytes as a .pte program.
//
// Program::load(Full) must reject or accept; whatever it accepts must load its methods
// (with arenas sized from MethodMeta, capped), take zero inputs at their upper-bound shapes
// and execute — returning errors, never crashing, reading or writing out of bounds, or
// hitting undefined behaviour. Linked with the portable kernels so real kernels run, with the
// XNNPACK backend (its blobs are verified, compiled into XNNPACK runtimes and run) and with the
// QNN backend's blob checks.
// The harness is test/fuzz/pte_harness.h (shared with test/hardening's regression test).
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 pte_fuzzer (see docs/security.md).
#include <cstdio>
#include <cstdlib>

#include "runtime/backend/backend.h"
#include "test/fuzz/pte_harness.h"

// Linked with the QNN backend (tools/fuzz/build_fuzzers.sh): programs with QNN delegates have
// their blobs verified and their tensor descriptions checked; the library path points nowhere,
// so init stops there cleanly and Qualcomm's own code (not ours to fuzz) never runs.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("EMBER_QNN_LIBRARY", "/nonexistent/ember-fuzz/libQnnHtp.so", 1);
  // Packed XNNPACK weights stay in memory: a cache directory would make one input's outcome
  // depend on the inputs before it (and fill the disk).
  unsetenv("EMBER_XNNPACK_WEIGHTS_CACHE");
  // A build that lost a backend would refuse its delegates quietly ("backend not linked")
  // and fuzz nothing of it: stop at once instead.
  for (const char* id : {"xnnpack", "qnn"}) {
    if (ember::find_backend(id) == nullptr) {
      std::fprintf(stderr, "pte_fuzzer: the %s backend is not linked (tools/fuzz/build_fuzzers.sh)\n", id);
      std::abort();
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ember::fuzz::run_pte_bytes(data, size);
  return 0;
}
