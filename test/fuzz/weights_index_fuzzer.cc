// libFuzzer target: arbitrary bytes as an XNNPACK packed-weights index file or block header
// (delegates/xnnpack/runtime/weights_index.h), the files the backend reads from a cache
// directory anyone may have written to.
//
// Each input is parsed twice: as given (reaching the checksum check), and with its trailing
// checksum recomputed so that mutations reach the entry parser. Whatever parse_index accepts
// must re-encode to the same bytes, and its entries must satisfy the documented invariants;
// check_block_header must accept only a header that agrees with the size and digest asked for.
// Never a crash, an out-of-bounds read or undefined behaviour.
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 weights_index_fuzzer
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "delegates/xnnpack/runtime/weights_index.h"
#include "runtime/core/little_endian.h"

namespace {

using namespace ember;           // NOLINT
using namespace ember::xnnpack;  // NOLINT

ContentDigest digest_at(const std::vector<uint8_t>& b, size_t at) {
  ContentDigest d;
  if (b.size() >= at + 16) {
    d.lo = read_le(b.data() + at, 8);
    d.hi = read_le(b.data() + at + 8, 8);
  }
  return d;
}

void check(const std::vector<uint8_t>& bytes) {
  // The digests the caller would expect: the file's own, so that a well-formed input parses.
  const ContentDigest program = digest_at(bytes, 16), environment = digest_at(bytes, 32);
  IndexFile index;
  if (parse_index(bytes.data(), bytes.size(), program, environment, &index) != nullptr) return;
  if (encode_index(index) != bytes) std::abort();  // accepted files round-trip exactly
  for (size_t i = 0; i < index.entries.size(); ++i) {
    const IndexEntry& e = index.entries[i];
    if (e.size == 0 || e.size > kMaxBlockBytes || e.kernel_offset == kNoOffset) std::abort();
    for (size_t j = i + 1; j < index.entries.size(); ++j) {
      if (index.entries[j].same_key(e.seed, e.kernel_offset, e.bias_offset)) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  check(bytes);
  if (size >= kIndexHeaderBytes + 16) {
    const size_t body = size - 16;
    const ContentDigest sum = content_digest(bytes.data(), body);
    write_le(bytes.data() + body, sum.lo, 8);
    write_le(bytes.data() + body + 8, sum.hi, 8);
    check(bytes);
  }
  // The same bytes as a block file's header.
  if (size >= kBlockHeaderBytes) {
    const ContentDigest d = digest_at(bytes, 24);
    const uint64_t block_size = read_le(data + 16, 8);
    const uint64_t file_size = static_cast<uint64_t>(size) + (block_size < (1ull << 40) ? block_size : 0);
    if (check_block_header(data, file_size, d, block_size) == nullptr) {
      if (file_size - kBlockHeaderBytes != block_size) std::abort();
      uint8_t again[kBlockHeaderBytes];
      encode_block_header(d, block_size, again);
      if (check_block_header(again, file_size, d, block_size) != nullptr) std::abort();
    }
    if (check_block_header(data, file_size, d, block_size + 1) == nullptr) std::abort();
  }
  return 0;
}
