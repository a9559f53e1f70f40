// Little-endian integers in byte buffers: the program file header, delegate compile specs.
// Header-only, allocation-free; `bytes` is 1..8.
#pragma once

#include <cstdint>

namespace ember {

inline uint64_t read_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline void write_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace ember
