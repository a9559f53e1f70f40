// A compiled PCRE2 pattern with the matching rules of Hugging Face tokenizers' Oniguruma
// regexes: UTF-8 with Unicode properties (\p{L}, \p{N}; \s, \w and \d are Unicode-aware),
// lookahead and scoped flags such as (?i:...).
//
// Oniguruma's \s is Unicode's White_Space; PCRE2's also lacks U+0085 (NEL), so compile() adds
// it to every \s (and removes it from \S outside character classes).
//
// Threading: the compiled code is immutable; each find_all() call has its own match data.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extension/module/status.h"

struct pcre2_real_code_8;

namespace ember {
namespace llm {

class Regex {
 public:
  // Errors name the pattern, PCRE2's message and the offset in the pattern.
  static Expected<std::unique_ptr<Regex>> compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches in `text` (valid UTF-8), left to right, as [begin, end) byte
  // offsets. As Oniguruma's iterator: an empty match right after the previous match is
  // skipped, and after an empty match the search moves on by one character.
  // Errors: PCRE2's match limits (a pattern that backtracks catastrophically).
  Status find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const;

  // Whether the pattern matches at `pos` exactly (anchored there), for single-character tests.
  bool matches_at(std::string_view text, size_t pos) const;

 private:
  explicit Regex(pcre2_real_code_8* code) : code_(code) {}
  pcre2_real_code_8* code_;
};

// `pattern` with the \s / \S adjustment described above (exposed for tests).
std::string adjust_whitespace_classes(std::string_view pattern);

}  // namespace llm
}  // namespace ember
