// Byte-level BPE from a Hugging Face tokenizer.json (GPT-2 / Llama-3 style).
//
// Supported (anything else is a load error naming the unsupported field, never wrong ids):
//   model       BPE: vocab, merges ("a b" strings or [["a","b"]] pairs), unk_token/fuse_unk,
//               byte_fallback, ignore_merges; dropout null or 0; no subword prefix/suffix
//   added_tokens special or not; lstrip, rstrip, single_word; matched in the text before
//               pre-tokenization, leftmost-longest, normalized=false ones first (as HF does)
//   normalizer  none (null or an empty Sequence)
//   pre_tokenizer ByteLevel (add_prefix_space, use_regex: GPT-2's pattern), Split (Regex or
//               String pattern, every behavior, invert), Sequence of these; exactly one ByteLevel
//   decoder     ByteLevel (or a Sequence holding only it)
//   post_processor ignored for encode() (ids carry no BOS/EOS); its template's leading special
//               token is bos_id()
//
// encode(text) gives the ids of HF's `Tokenizer.encode(text, add_special_tokens=False).ids`;
// decode(ids) its `decode(ids, skip_special_tokens=True)`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "extension/llm/regex.h"
#include "extension/llm/tokenizer.h"

namespace ember {
namespace llm {

// Parses and validates a tokenizer.json held in memory; `origin` names it in errors.
Expected<std::unique_ptr<Tokenizer>> load_bpe_tokenizer(std::string_view json_text,
                                                        const std::string& origin);

namespace bpe {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// One pre-tokenizer step, applied to every piece the previous steps left.
struct PreTokenizerStep {
  enum class Kind { kByteLevel, kSplit } kind = Kind::kByteLevel;
  bool add_prefix_space = false;  // ByteLevel
  std::unique_ptr<Regex> regex;   // ByteLevel with use_regex (GPT-2's pattern), Split Regex
  std::string literal;            // Split with a String pattern
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};

struct Merge {
  int32_t rank;
  int32_t new_id;
};

// Everything a loaded tokenizer.json holds; filled and validated by load_bpe_tokenizer.
struct BpeModel {
  std::unordered_map<std::string, int32_t> vocab;  // model vocab and added tokens
  std::unordered_map<uint64_t, Merge> merges;      // (left id << 32 | right id) -> merge
  std::vector<std::string> bytes;                  // per id: what it decodes to ("" = none)
  std::vector<AddedToken> added_raw;               // normalized=false: matched first
  std::vector<AddedToken> added_normalized;        // normalized=true: matched in what is left
  std::vector<PreTokenizerStep> steps;
  std::unique_ptr<Regex> word_char;                // \w, only when a token is single_word
  int32_t unk_id = -1;
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  int32_t byte_fallback_ids[256] = {};  // id of "<0xNN>", -1 when missing
  int32_t bos_id = -1, eos_id = -1;
};

}  // namespace bpe

class BpeTokenizer : public Tokenizer {
 public:
  explicit BpeTokenizer(bpe::BpeModel model) : m_(std::move(model)) {}

  Status encode(std::string_view text, std::vector<int32_t>* ids) const override;
  std::string_view token_bytes(int32_t id) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(m_.bytes.size()); }
  int32_t bos_id() const override { return m_.bos_id; }
  int32_t eos_id() const override { return m_.eos_id; }
  std::string decode(const std::vector<int32_t>& ids) const override;

 private:
  // A stretch of the text: an added token's id, or text still to pre-tokenize (id -1).
  struct Piece {
    std::string_view text;
    int32_t id;
  };
  void split_added(const std::vector<bpe::AddedToken>& tokens, std::vector<Piece>* pieces) const;
  Status pre_tokenize(std::string_view text, std::vector<std::string>* words) const;
  void bpe_word(const std::string& word, std::vector<int32_t>* ids) const;

  bpe::BpeModel m_;
};

}  // namespace llm
}  // namespace ember
