// libFuzzer target: arbitrary bytes as a .ptd data file.
//
// DataFile::load at Structure and Full must reject or accept; whatever they accept must index
// consistently (entry(i) and find(key) agree; keys, sizes and bytes lie inside the file, the
// bytes exactly numel x element size), and small programs whose external segments refer to
// its float32 entries must bind, run and read those bytes, or be refused naming the tensor
// when recorded with another digest, dtype, shape or key. Never crashing, reading or writing
// out of bounds, or hitting undefined behaviour; a broken invariant aborts. Linked with the
// portable kernels (aten::mul). The harness is test/fuzz/ptd_harness.h (shared with
// test/hardening's regression test).
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 ptd_fuzzer (see docs/security.md).
#include <cstdio>
#include <cstdlib>

#include "test/fuzz/ptd_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ember::fuzz::PtdOutcome o = ember::fuzz::run_ptd_bytes(data, size);
  if (!o.violation.empty()) {
    std::fprintf(stderr, "ptd_fuzzer: invariant violated: %s\n", o.violation.c_str());
    std::abort();
  }
  return 0;
}
