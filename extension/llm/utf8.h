// UTF-8 helpers for the tokenizers: validation, code point iteration, Unicode White_Space,
// lossy decoding (as Rust's String::from_utf8_lossy, which Hugging Face's decode uses) and
// GPT-2's byte <-> printable-character mapping of byte-level BPE.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember {
namespace llm {

// Offset of the first byte that does not start a well-formed UTF-8 sequence (overlongs,
// surrogates and code points above U+10FFFF are ill-formed), or text.size() when it is valid.
size_t utf8_invalid_offset(std::string_view text);

// Length of the well-formed sequence starting at text[pos] (1..4), or 0 when ill-formed.
size_t utf8_char_len(std::string_view text, size_t pos);

// The code point of the well-formed sequence of length `len` at text[pos].
uint32_t utf8_decode(std::string_view text, size_t pos, size_t len);

// Appends `cp` (< 0x110000, not a surrogate) as UTF-8.
void utf8_append(uint32_t cp, std::string* out);

// Unicode's White_Space property (Rust's char::is_whitespace, used for lstrip/rstrip).
bool is_unicode_whitespace(uint32_t cp);

// `bytes` with each maximal ill-formed subsequence replaced by U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// GPT-2's byte-level alphabet: every byte is shown as one printable character; the printable
// Latin-1 bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) as themselves, the others as U+0100 + n in
// byte order (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
uint32_t byte_to_unicode(uint8_t byte);
// The byte shown as `cp`, or -1 when `cp` is not in the alphabet.
int unicode_to_byte(uint32_t cp);

}  // namespace llm
}  // namespace ember
