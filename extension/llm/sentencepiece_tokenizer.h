// SentencePiece `.model` files (BPE or unigram) through Debian's libsentencepiece: encode and
// decode are the library's own; token_bytes() is precomputed at load from the pieces.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "extension/llm/tokenizer.h"

namespace ember {
namespace llm {

// Loads a serialized SentencePiece ModelProto; `origin` names it in errors.
Expected<std::unique_ptr<Tokenizer>> load_sentencepiece_tokenizer(std::string_view model_bytes,
                                                                  const std::string& origin);

}  // namespace llm
}  // namespace ember
