#include "extension/llm/utf8.h"

namespace ember {
namespace llm {

namespace {

// The valid range of a sequence's second byte, which rules out overlongs (E0, F0),
// surrogates (ED) and code points past U+10FFFF (F4); later bytes are always 80..BF.
bool lead_info(uint8_t b, size_t* len, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b < 0x80) {
    *len = 1;
  } else if (b >= 0xC2 && b <= 0xDF) {
    *len = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    *len = 3;
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    *len = 4;
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

// Bytes of a well-formed prefix at pos: returns the full length when complete, else sets
// *valid_prefix to how many bytes form the start of a possible sequence and returns 0.
size_t scan(std::string_view text, size_t pos, size_t* valid_prefix) {
  size_t len;
  uint8_t lo, hi;
  *valid_prefix = 0;
  if (!lead_info(static_cast<uint8_t>(text[pos]), &len, &lo, &hi)) return 0;
  for (size_t k = 1; k < len; ++k) {
    if (pos + k >= text.size()) {
      *valid_prefix = k;
      return 0;
    }
    const uint8_t c = static_cast<uint8_t>(text[pos + k]);
    const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      *valid_prefix = k;
      return 0;
    }
  }
  return len;
}

}  // namespace

size_t utf8_char_len(std::string_view text, size_t pos) {
  size_t prefix;
  return pos < text.size() ? scan(text, pos, &prefix) : 0;
}

size_t utf8_invalid_offset(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t len = utf8_char_len(text, pos);
    if (len == 0) return pos;
    pos += len;
  }
  return text.size();
}

uint32_t utf8_decode(std::string_view text, size_t pos, size_t len) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + k])); };
  switch (len) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void utf8_append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_unicode_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t prefix;
    const size_t len = scan(bytes, pos, &prefix);
    if (len > 0) {
      out.append(bytes.substr(pos, len));
      pos += len;
    } else {
      out.append("\xEF\xBF\xBD");  // one U+FFFD per maximal ill-formed subsequence
      pos += prefix > 0 ? prefix : 1;
    }
  }
  return out;
}

namespace {
bool printable_latin1(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}
}  // namespace

uint32_t byte_to_unicode(uint8_t byte) {
  if (printable_latin1(byte)) return byte;
  // The n-th non-printable byte (in byte order) becomes U+0100 + n.
  uint32_t n = 0;
  for (uint32_t b = 0; b < byte; ++b) n += printable_latin1(b) ? 0 : 1;
  return 0x100 + n;
}

int unicode_to_byte(uint32_t cp) {
  if (cp < 0x100) return printable_latin1(cp) ? static_cast<int>(cp) : -1;
  if (cp >= 0x100 + 68) return -1;  // 68 bytes are not printable
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    if (printable_latin1(b)) continue;
    if (0x100 + n == cp) return static_cast<int>(b);
    ++n;
  }
  return -1;
}

}  // namespace llm
}  // namespace ember
