#include "extension/llm/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "extension/llm/utf8.h"

namespace ember {
namespace llm {

std::string adjust_whitespace_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 16);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 'Q') {  // \Q...\E is literal text: copy it untouched
        const size_t end = p.find("\\E", i + 2);
        const size_t stop = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, stop - i));
        i = stop;
        continue;
      }
      if (e == 's') {
        out.append(in_class ? "\\s\\x{85}" : "[\\s\\x{85}]");
      } else if (e == 'S' && !in_class) {
        out.append("[^\\s\\x{85}]");
      } else {
        out.append(p.substr(i, 2));
      }
      i += 2;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      ++i;
      // A ']' right after '[' or '[^' is a literal member, not the end of the class.
      if (i < p.size() && p[i] == '^') out.push_back(p[i++]);
      if (i < p.size() && p[i] == ']') out.push_back(p[i++]);
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // [:alpha:]
      const size_t end = p.find(":]", i + 2);
      if (end != std::string_view::npos) {
        out.append(p.substr(i, end + 2 - i));
        i = end + 2;
        continue;
      }
    }
    if (in_class && c == ']') in_class = false;
    out.push_back(c);
    ++i;
  }
  return out;
}

namespace {
std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof(buf));
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<char*>(buf));
}
}  // namespace

Expected<std::unique_ptr<Regex>> Regex::compile(std::string_view pattern) {
  if (utf8_invalid_offset(pattern) != pattern.size()) {
    return Status(Error::InvalidArgument, "regex pattern is not valid UTF-8");
  }
  const std::string adjusted = adjust_whitespace_classes(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(adjusted.data()), adjusted.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    return Status(Error::InvalidArgument, "regex '" + std::string(pattern) + "' does not compile: " +
                                              pcre2_message(err) + " (at offset " +
                                              std::to_string(offset) + " of the PCRE2 form '" +
                                              adjusted + "')");
  }
  // JIT is only a speed-up: when it is unavailable pcre2_match interprets.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return std::unique_ptr<Regex>(new Regex(code));
}

Regex::~Regex() { pcre2_code_free(code_); }

namespace {
// One pcre2_match; falls back from JIT to the interpreter when the JIT stack is too small.
int match_once(const pcre2_code* code, std::string_view text, size_t start, uint32_t options,
               pcre2_match_data* md) {
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK, md, nullptr);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    rc = pcre2_match(code, subject, text.size(), start, options | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                     md, nullptr);
  }
  return rc;
}

struct MatchData {
  explicit MatchData(const pcre2_code* code) : md(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(md); }
  pcre2_match_data* md;
};
}  // namespace

Status Regex::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>* matches) const {
  matches->clear();
  MatchData data(code_);
  if (data.md == nullptr) return Status(Error::OutOfMemory, "cannot allocate regex match data");
  size_t pos = 0;
  bool have_last = false;
  size_t last_end = 0;
  while (pos <= text.size()) {
    const int rc = match_once(code_, text, pos, 0, data.md);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return Status(Error::InvalidArgument,
                    "pre-tokenizer regex failed on the text: " + pcre2_message(rc) +
                        " (a pattern that backtracks too much; simplify it)");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    const size_t begin = ov[0], end = ov[1];
    // \K can report a match that ends before it starts or starts before `pos`.
    if (end < begin || begin < pos || end > text.size()) {
      return Status(Error::NotSupported,
                    "pre-tokenizer regex moved its match start with \\K, which Ember does not "
                    "support; remove \\K from the pattern");
    }
    if (begin == end) {
      if (!(have_last && last_end == end)) matches->emplace_back(begin, end);
      have_last = true;
      last_end = end;
      if (end >= text.size()) break;
      const size_t len = utf8_char_len(text, end);
      pos = end + (len == 0 ? 1 : len);
      continue;
    }
    matches->emplace_back(begin, end);
    have_last = true;
    last_end = end;
    pos = end;
  }
  return Status::Ok();
}

bool Regex::matches_at(std::string_view text, size_t pos) const {
  MatchData data(code_);
  if (data.md == nullptr) return false;
  return match_once(code_, text, pos, PCRE2_ANCHORED, data.md) >= 0;
}

}  // namespace llm
}  // namespace ember
