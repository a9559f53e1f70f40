// The pt2 fuzzer's harness, shared with the regression tests (test/hardening): exports
// bytes as a .pt2 archive and checks that whatever exports also loads.
//
// .pt2 archives are stored (uncompressed) zips, and libzip checks each entry's CRC-32, so a
// mutation inside models/model.json would almost always end as a CRC error before the JSON
// is parsed. Each input therefore runs twice: as given, and with the CRCs of stored entries
// recomputed.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"

namespace ember {
namespace fuzz {

struct Pt2Outcome {
  int exported = 0;              // runs that exported (0..2)
  bool invalid_program = false;  // an exported program failed Program::load(Full): a bug
  std::vector<std::string> messages;  // each failure's status message
};

inline uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
inline uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void wr32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Rewrites the CRC-32 of every stored (method 0) entry, in its local header and in the
// central directory, to match the entry's bytes. Returns false when nothing changed.
inline bool fix_crcs(std::vector<uint8_t>& z) {
  const size_t n = z.size();
  if (n < 22) return false;
  // End of central directory: the last "PK\5\6" within 64 KiB + 22 of the end.
  size_t eocd = n;
  for (size_t i = n - 22 + 1; i-- > 0 && n - i <= 65557;) {
    if (rd32(&z[i]) == 0x06054b50u) { eocd = i; break; }
  }
  if (eocd == n) return false;
  uint16_t entries = rd16(&z[eocd + 10]);
  uint64_t cd = rd32(&z[eocd + 16]);
  bool changed = false;
  for (uint16_t e = 0; e < entries; ++e) {
    if (cd + 46 > n || rd32(&z[cd]) != 0x02014b50u) break;
    uint16_t method = rd16(&z[cd + 10]);
    uint64_t csize = rd32(&z[cd + 20]);
    uint16_t name_len = rd16(&z[cd + 28]), extra_len = rd16(&z[cd + 30]), comment_len = rd16(&z[cd + 32]);
    uint64_t local = rd32(&z[cd + 42]);
    if (method == 0 && csize != 0xFFFFFFFFu && local + 30 <= n && rd32(&z[local]) == 0x04034b50u) {
      uint64_t data = local + 30 + rd16(&z[local + 26]) + rd16(&z[local + 28]);
      if (data <= n && csize <= n - data) {
        uint32_t crc = static_cast<uint32_t>(
            crc32(0L, z.data() + data, static_cast<uInt>(csize)));
        if (rd32(&z[cd + 16]) != crc || rd32(&z[local + 14]) != crc) changed = true;
        wr32(&z[cd + 16], crc);
        wr32(&z[local + 14], crc);
      }
    }
    cd += 46 + name_len + extra_len + comment_len;
  }
  return changed;
}

// Exports one archive; records the status, and whether an exported program failed to load.
inline void export_one(const uint8_t* data, size_t size, Pt2Outcome* outcome) {
  exporter::ExportOptions options;
  // examples/custom_op's operator (its seed is in the corpus): programs calling a custom
  // operator import through its user-given schema. Adding it again is a no-op.
  options.custom_op_schemas = {"ember_example::scaled_tanh(Tensor x, float scale=1., float shift=0.) -> Tensor"};
  auto result = exporter::export_pt2_bytes(data, size, options);
  if (!result.ok()) {
    outcome->messages.push_back(std::string(result.status().message()));
    return;
  }
  ++outcome->exported;
  // What the exporter emits must load with full verification.
  const std::vector<uint8_t>& pte = result->pte;
  std::vector<uint64_t> aligned((pte.size() + 7) / 8 + 1);
  std::memcpy(aligned.data(), pte.data(), pte.size());
  BufferDataLoader loader(aligned.data(), pte.size());
  Diagnostic diag;
  Result<Program> program = Program::load(&loader, Program::Verification::Full, &diag);
  if (!program.ok()) {
    outcome->invalid_program = true;
    outcome->messages.push_back(std::string("the exporter emitted a program that fails verification: ") +
                                diag.message);
  }
}

// The archive as given (the zip layer), then with its stored entries' CRCs fixed (the
// importer and the pipeline behind it).
inline Pt2Outcome run_pt2_bytes(const uint8_t* data, size_t size) {
  Pt2Outcome outcome;
  export_one(data, size, &outcome);
  std::vector<uint8_t> fixed(data, data + size);
  if (fix_crcs(fixed)) export_one(fixed.data(), fixed.size(), &outcome);
  return outcome;
}

}  // namespace fuzz
}  // namespace ember
