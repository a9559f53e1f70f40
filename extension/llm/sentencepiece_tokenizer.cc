#include "extension/llm/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <vector>

#include "extension/llm/utf8.h"

namespace ember {
namespace llm {

namespace {

// The bytes a piece stands for: "<0xNN>" byte pieces their byte, control, unknown and unused
// pieces nothing, the others their text with U+2581 (the space marker) as ' '.
std::string piece_bytes(const sentencepiece::SentencePieceProcessor& sp, int id) {
  if (sp.IsControl(id) || sp.IsUnknown(id) || sp.IsUnused(id)) return std::string();
  const std::string& piece = sp.IdToPiece(id);
  if (sp.IsByte(id)) {
    unsigned value = 0;
    if (piece.size() == 6 && std::sscanf(piece.c_str(), "<0x%2X>", &value) == 1 && value < 256)
      return std::string(1, static_cast<char>(value));
    return std::string();
  }
  std::string out;
  const std::string_view marker = "\xE2\x96\x81";  // U+2581
  for (size_t pos = 0; pos < piece.size();) {
    if (piece.compare(pos, marker.size(), marker) == 0) {
      out.push_back(' ');
      pos += marker.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

class SentencePieceTokenizer : public Tokenizer {
 public:
  Status init(std::string_view model_bytes, const std::string& origin) {
    const sentencepiece::util::Status st = sp_.LoadFromSerializedProto(model_bytes);
    if (!st.ok()) {
      std::string why = st.ToString();
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      return Status(Error::InvalidArgument,
                    origin + ": not a SentencePiece model (" + why +
                        "); Ember reads SentencePiece .model files and Hugging Face tokenizer.json");
    }
    const int n = sp_.GetPieceSize();
    if (n <= 0) return Status(Error::InvalidArgument, origin + ": SentencePiece model has no pieces");
    bytes_.resize(static_cast<size_t>(n));
    for (int id = 0; id < n; ++id) bytes_[static_cast<size_t>(id)] = piece_bytes(sp_, id);
    return Status::Ok();
  }

  Status encode(std::string_view text, std::vector<int32_t>* ids) const override {
    ids->clear();
    const size_t bad = utf8_invalid_offset(text);
    if (bad != text.size()) {
      return Status(Error::InvalidArgument, "text to encode is not valid UTF-8 (byte " +
                                                std::to_string(bad) + "); pass UTF-8 text");
    }
    std::vector<int> out;
    const sentencepiece::util::Status st = sp_.Encode(text, &out);
    if (!st.ok()) return Status(Error::InvalidArgument, "SentencePiece encode failed: " + st.ToString());
    ids->assign(out.begin(), out.end());
    return Status::Ok();
  }

  std::string_view token_bytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return bytes_[static_cast<size_t>(id)];
  }
  int32_t vocab_size() const override { return static_cast<int32_t>(bytes_.size()); }
  int32_t bos_id() const override { return sp_.bos_id(); }
  int32_t eos_id() const override { return sp_.eos_id(); }

  std::string decode(const std::vector<int32_t>& ids) const override {
    // The library rejects the whole list for one bad id; skip them as the BPE side does.
    std::vector<int> in;
    in.reserve(ids.size());
    for (int32_t id : ids)
      if (id >= 0 && id < vocab_size()) in.push_back(id);
    std::string text;
    if (!sp_.Decode(in, &text).ok()) return std::string();
    return text;
  }

 private:
  sentencepiece::SentencePieceProcessor sp_;
  std::vector<std::string> bytes_;
};

}  // namespace

Expected<std::unique_ptr<Tokenizer>> load_sentencepiece_tokenizer(std::string_view model_bytes,
                                                                  const std::string& origin) {
  auto tok = std::make_unique<SentencePieceTokenizer>();
  // libsentencepiece reports errors as util::Status; the catch keeps a throwing protobuf or
  // allocation failure inside the library boundary.
  try {
    Status st = tok->init(model_bytes, origin);
    if (!st.ok()) return st;
  } catch (const std::exception& e) {
    return Status(Error::InvalidArgument, origin + ": SentencePiece could not load it (" + e.what() + ")");
  }
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

}  // namespace llm
}  // namespace ember
