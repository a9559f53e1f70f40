// libFuzzer target: arbitrary bytes as a .pt2 (torch.export zip) archive.
//
// The importer and the whole export pipeline must return a Status on any bytes: never
// crash, throw, or hit undefined behaviour. When export succeeds, the emitted program must
// pass Program::load(Full) ("exports" implies "loads"). The harness is
// test/fuzz/pt2_harness.h (shared with test/hardening's regression test).
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 pt2_fuzzer (see docs/security.md).
#include <cstdio>
#include <cstdlib>

#include "test/fuzz/pt2_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::Pt2Outcome outcome = ember::fuzz::run_pt2_bytes(data, size);
  if (outcome.invalid_program) {
    std::fprintf(stderr, "pt2_fuzzer: %s\n", outcome.messages.back().c_str());
    std::abort();
  }
  return 0;
}
