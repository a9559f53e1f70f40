// Utf8Streamer: turns the byte pieces of tokens into printable text as they are produced.
// A UTF-8 character may be split across tokens (byte-level BPE, byte fallback); the streamer
// holds back an incomplete trailing character (at most 3 bytes) until the bytes that finish
// it arrive. Bytes that are not valid UTF-8 pass through unchanged.
//
// Ownership: the returned views point into the streamer and are valid until the next call.
// Allocation: none once reserve() covers the longest piece pushed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ember {
namespace llm {

class Utf8Streamer {
 public:
  void reserve(size_t max_piece_bytes) {
    text_.reserve(max_piece_bytes + 8);
    pending_.reserve(8);
  }
  void reset() { pending_.clear(); }

  // The text that is complete after appending `piece` (possibly empty).
  std::string_view push(std::string_view piece) {
    text_.assign(pending_);
    text_.append(piece.data(), piece.size());
    const size_t cut = complete_prefix(text_);
    pending_.assign(text_, cut, std::string::npos);
    text_.resize(cut);
    return text_;
  }

  // Whatever is held back (an unfinished character at the end of generation).
  std::string_view flush() {
    text_.assign(pending_);
    pending_.clear();
    return text_;
  }

 private:
  // Length of `s` without an unfinished multi-byte character at its end.
  static size_t complete_prefix(const std::string& s) {
    const size_t n = s.size();
    for (size_t back = 1; back <= 3 && back <= n; ++back) {
      const unsigned char c = static_cast<unsigned char>(s[n - back]);
      if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
      const size_t want = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
      return want > back ? n - back : n;  // a lead byte still missing continuations is held
    }
    return n;
  }

  std::string text_;
  std::string pending_;
};

}  // namespace llm
}  // namespace ember
