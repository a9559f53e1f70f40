// Little-endian integers in byte buffers: the program file header, delegate compile specs.
// Header-only, allocation-free; `bytes` is 1..8.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {

inline uint64_t read_le(const uint8_t* p, int bytes) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  // The host's own order: a plain load (no loop, no call; smaller core code).
  if (bytes == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (bytes == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
#endif
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void write_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace ember
