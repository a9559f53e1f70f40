// A 128-bit digest of a byte range: identifies content (a program's bytes, a packed-weights
// block) for caches, not for security. Header-only and allocation-free; deterministic across
// machines and builds (little-endian reads, fixed constants), about 5 GB/s.
//
// Four independent 64-bit lanes absorb 32 bytes per step (multiply-xorshift), then are folded
// with the length into two 64-bit words, each passed through a final avalanche. Two ranges
// that differ anywhere give different digests except with probability about 2^-128 for
// non-adversarial data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ember {

struct ContentDigest {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const ContentDigest& o) const { return lo == o.lo && hi == o.hi; }
  bool operator!=(const ContentDigest& o) const { return !(*this == o); }
  bool is_zero() const { return lo == 0 && hi == 0; }
};

namespace digest_detail {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;

inline uint64_t read64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

inline uint64_t absorb(uint64_t lane, uint64_t word) {
  lane ^= word * kPrime2;
  lane = (lane << 31) | (lane >> 33);
  return lane * kPrime1;
}

// MurmurHash3's 64-bit finaliser: every input bit reaches every output bit.
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace digest_detail

// Incremental form: update() with consecutive pieces gives the digest of their concatenation
// only when every piece but the last is a multiple of 32 bytes long (callers hash whole
// ranges, or 32-byte aligned chunks of one).
class ContentDigester {
 public:
  void update(const void* data, size_t size) {
    using namespace digest_detail;
    const unsigned char* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 32 <= size; i += 32) {
      a_ = absorb(a_, read64(p + i));
      b_ = absorb(b_, read64(p + i + 8));
      c_ = absorb(c_, read64(p + i + 16));
      d_ = absorb(d_, read64(p + i + 24));
    }
    // The tail (< 32 bytes): zero-padded words, the tail length is folded in via length_.
    unsigned char tail[32] = {0};
    if (i < size) {
      std::memcpy(tail, p + i, size - i);
      a_ = absorb(a_, read64(tail));
      b_ = absorb(b_, read64(tail + 8));
      c_ = absorb(c_, read64(tail + 16));
      d_ = absorb(d_, read64(tail + 24));
    }
    length_ += size;
  }
  ContentDigest finish() const {
    using namespace digest_detail;
    ContentDigest out;
    out.lo = avalanche(a_ ^ ((c_ << 17) | (c_ >> 47)) ^ length_);
    out.hi = avalanche(b_ ^ ((d_ << 23) | (d_ >> 41)) ^ (length_ * kPrime1) ^ out.lo);
    return out;
  }

 private:
  uint64_t a_ = 0x243F6A8885A308D3ull;
  uint64_t b_ = 0x13198A2E03707344ull;
  uint64_t c_ = 0xA4093822299F31D0ull;
  uint64_t d_ = 0x082EFA98EC4E6C89ull;
  uint64_t length_ = 0;
};

inline ContentDigest content_digest(const void* data, size_t size) {
  ContentDigester d;
  d.update(data, size);
  return d.finish();
}

// 32 lowercase hex digits (hi then lo) and a terminating NUL into `out[33]`.
inline void digest_hex(const ContentDigest& d, char* out) {
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) out[i] = kHex[(d.hi >> (60 - 4 * i)) & 15];
  for (int i = 0; i < 16; ++i) out[16 + i] = kHex[(d.lo >> (60 - 4 * i)) & 15];
  out[32] = 0;
}

}  // namespace ember
