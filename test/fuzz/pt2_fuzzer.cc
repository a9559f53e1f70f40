// libFuzzer target: arbitrary bytes as a .pt2 (torch.export zip) archive.
//
// The importer and the whole export pipeline must return a Status on any bytes: never
// crash, throw, or hit undefined behaviour. When export succeeds, the emitted program must
// pass Program::load(Full) ("exports" implies "loads").
//
// .pt2 archives are stored (uncompressed) zips, and libzip checks each entry's CRC-32, so a
// mutation inside models/model.json would almost always end as a CRC error before the JSON
// is parsed. Each input therefore runs twice: as given (the zip layer), and with the CRCs of
// stored entries recomputed (the importer and the pipeline behind it).
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "exporter/exporter.h"
#include "runtime/loader/buffer_data_loader.h"
#include "runtime/program/program.h"

namespace {

uint16_t rd16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
void wr32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Rewrites the CRC-32 of every stored (method 0) entry, in its local header and in the
// central directory, to match the entry's bytes. Returns false when nothing changed.
bool fix_crcs(std::vector<uint8_t>& z) {
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

void export_one(const uint8_t* data, size_t size) {
  using namespace ember;
  exporter::ExportOptions options;
  auto result = exporter::export_pt2_bytes(data, size, options);
  if (!result.ok()) return;
  // What the exporter emits must load with full verification.
  const std::vector<uint8_t>& pte = result->pte;
  std::vector<uint64_t> aligned((pte.size() + 7) / 8 + 1);
  std::memcpy(aligned.data(), pte.data(), pte.size());
  BufferDataLoader loader(aligned.data(), pte.size());
  Diagnostic diag;
  Result<Program> program = Program::load(&loader, Program::Verification::Full, &diag);
  if (!program.ok()) {
    std::fprintf(stderr, "pt2_fuzzer: the exporter emitted a program that fails verification: %s\n",
                 diag.message);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  export_one(data, size);
  std::vector<uint8_t> fixed(data, data + size);
  if (fix_crcs(fixed)) export_one(fixed.data(), fixed.size());
  return 0;
}
