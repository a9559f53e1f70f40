// Tokenizers for the LLM runner: text <-> token ids.
//
// Two formats, chosen by load_tokenizer() from the file's content:
//  - Hugging Face `tokenizer.json` with a BPE model (byte-level, GPT-2 / Llama-3 style:
//    merges, added and special tokens, the pre-tokenizer's split regex) — bpe_tokenizer.h;
//  - SentencePiece `.model` files (through Debian's libsentencepiece) — sentencepiece_tokenizer.h.
//
// Ownership and lifetime: a Tokenizer owns all its tables; string_views it returns point into
// them and stay valid for the Tokenizer's lifetime.
// Threading: a loaded Tokenizer is immutable; its const methods may be called from several
// threads at once.
// Allocation: encode() and decode() allocate (std::vector / std::string); token_bytes() does
// not, so a decode loop can stream text without allocating.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "extension/module/status.h"

namespace ember {
namespace llm {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`, without BOS/EOS (the runner adds BOS when the model wants it).
  // Special tokens spelled in the text (e.g. "<|endoftext|>") map to their ids (tokenizer.json;
  // SentencePiece treats "<s>" in text as plain text, as the library does).
  // Errors: text that is not valid UTF-8; a pre-tokenizer regex hitting PCRE2's match limit.
  virtual Status encode(std::string_view text, std::vector<int32_t>* ids) const = 0;

  // The bytes token `id` contributes to decoded text (byte-level BPE: its raw bytes;
  // SentencePiece: the piece with U+2581 as ' ', a byte-fallback piece "<0x41>" as its byte;
  // control tokens such as BOS/EOS, special added tokens and SentencePiece's unknown piece:
  // empty). A multi-byte UTF-8 character may be split across tokens, so a streaming caller
  // joins bytes before printing (Utf8Streamer does). SentencePiece models with a dummy prefix
  // give the first word's piece a leading ' ' that decode() drops; a streaming caller drops it
  // too. Empty for an id outside [0, vocab_size()).
  virtual std::string_view token_bytes(int32_t id) const = 0;

  // Number of ids (the largest id + 1, added tokens included).
  virtual int32_t vocab_size() const = 0;

  // Ids the tokenizer file declares (-1 when it declares none). SentencePiece models declare
  // both. tokenizer.json names neither (tokenizer_config.json does): BOS is the special token
  // the post-processor's template puts first, else one of <|begin_of_text|> <s> <bos>
  // <|startoftext|>; EOS is one of <|end_of_text|> <|endoftext|> </s> <eos>.
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;

  // Text of `ids`, as the reference tokenizer's decode(ids, skip_special_tokens=True) gives it
  // (ill-formed UTF-8 becomes U+FFFD; ids outside [0, vocab_size()) are skipped).
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
};

// Loads a tokenizer: a file starting with '{' is a tokenizer.json, anything else is tried as
// a SentencePiece model. Errors say which file, what is wrong and what is supported.
Expected<std::unique_ptr<Tokenizer>> load_tokenizer(const std::string& path);

// The same from bytes in memory (tests, fuzzing, files embedded in an app); `origin` names
// them in error messages.
Expected<std::unique_ptr<Tokenizer>> load_tokenizer_from_buffer(std::string_view bytes,
                                                               const std::string& origin);

}  // namespace llm
}  // namespace ember
