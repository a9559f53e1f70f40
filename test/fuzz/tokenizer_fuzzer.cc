// libFuzzer target: arbitrary bytes as a Hugging Face tokenizer.json.
//
// load_bpe_tokenizer must reject or accept; whatever it accepts must encode a few fixed texts
// (special tokens, whitespace runs, multi-byte characters) to ids inside [0, vocab_size()),
// give every id's token_bytes, and decode to valid UTF-8 — never crashing, reading out of
// bounds or hitting undefined behaviour. Only the JSON path is fuzzed: the SentencePiece path is
// Debian's libsentencepiece, which is not instrumented here.
//
// Build and run: tools/fuzz/run_fuzzers.sh 60 tokenizer_fuzzer (seeds: test/llm/data/*.json).
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "extension/llm/bpe_tokenizer.h"
#include "extension/llm/utf8.h"

namespace {

const char* const kTexts[] = {
    "Hello world! don't 12345 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",
    "  a\t\tb\n\n\r\n  <|endoftext|>x<|begin_of_text|> <mask>  \xC2\x85 end ",
    "",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto tok = ember::llm::load_bpe_tokenizer(bytes, "fuzz");
  if (!tok.ok()) return 0;
  const ember::llm::Tokenizer& t = **tok;
  std::vector<int32_t> ids;
  for (const char* text : kTexts) {
    if (!t.encode(text, &ids).ok()) continue;  // e.g. a regex past PCRE2's match limit
    for (int32_t id : ids) {
      if (id < 0 || id >= t.vocab_size()) std::abort();  // ids must index the vocab
      (void)t.token_bytes(id);
    }
    const std::string out = t.decode(ids);
    if (ember::llm::utf8_invalid_offset(out) != out.size()) std::abort();
  }
  return 0;
}
