// tokenizer.json -> bpe::BpeModel, validating every field Ember reads. Whatever would change
// the ids and is not implemented is an error naming it, so a model never runs on wrong ids.
#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "extension/llm/bpe_tokenizer.h"
#include "extension/llm/utf8.h"

namespace ember {
namespace llm {

namespace {

using Json = nlohmann::json;
using bpe::AddedToken;
using bpe::BpeModel;
using bpe::PreTokenizerStep;

// GPT-2's pre-tokenizer pattern (ByteLevel with use_regex).
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Ids are indices of a table; a file whose largest id is far past its token count is corrupt.
constexpr int64_t kMaxId = (int64_t{1} << 24) - 1;

class Loader {
 public:
  explicit Loader(const std::string& origin) : origin_(origin) {}

  Status bad(const std::string& where, const std::string& what) const {
    return Status(Error::InvalidArgument, origin_ + ": " + where + ": " + what);
  }
  Status unsupported(const std::string& where, const std::string& what) const {
    return Status(Error::NotSupported, origin_ + ": " + where + ": " + what);
  }

  // Every key of `obj` must be one Ember knows: an unknown one may change the ids.
  Status known_keys(const Json& obj, const std::string& where,
                    std::initializer_list<const char*> keys) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
        return unsupported(where, "field '" + it.key() + "' is not supported by Ember");
    }
    return Status::Ok();
  }
  // A boolean field; absent or null gives `dflt`.
  Status get_bool(const Json& obj, const char* key, const std::string& where, bool dflt,
                  bool* out) const {
    auto it = obj.find(key);
    *out = dflt;
    if (it == obj.end() || it->is_null()) return Status::Ok();
    if (!it->is_boolean()) return bad(where + "." + key, "must be true or false, got " + it->dump());
    *out = it->get<bool>();
    return Status::Ok();
  }
  // A string field that must be absent, null or "" (features Ember does not implement).
  Status must_be_empty(const Json& obj, const char* key, const std::string& where,
                       const std::string& why) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty()))
      return Status::Ok();
    return unsupported(where + "." + key, it->dump(-1, ' ', true).substr(0, 80) + ": " + why);
  }
  std::string type_of(const Json& obj) const {
    auto it = obj.find("type");
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
  }

  Status model(const Json& j, BpeModel* m);
  Status added_tokens(const Json& j, BpeModel* m);
  Status pre_tokenizer(const Json& j, const std::string& where, int depth, BpeModel* m, int* byte_levels);
  Status decoder(const Json& j, const std::string& where, int depth, int* byte_levels);
  Status normalizer(const Json& j);
  void special_ids(const Json& root, BpeModel* m);

 private:
  const std::string& origin_;
  std::vector<std::string> id_owner_;  // model vocab token of each id ("" when unused)
};

// What a token decodes to: GPT-2's byte for each character when all of them are byte-level
// characters, else the token's own UTF-8 (HF's ByteLevel decoder does the same per token).
std::string decoded_bytes(const std::string& token) {
  std::string out;
  for (size_t pos = 0; pos < token.size();) {
    const size_t len = utf8_char_len(token, pos);
    const int b = len == 0 ? -1 : unicode_to_byte(utf8_decode(token, pos, len));
    if (b < 0) return token;
    out.push_back(static_cast<char>(b));
    pos += len;
  }
  return out;
}

Status Loader::model(const Json& j, BpeModel* m) {
  if (!j.is_object()) return bad("model", "must be an object, got " + std::string(j.type_name()));
  const std::string type = type_of(j);
  if (j.contains("type") && type != "BPE") {
    return unsupported("model.type", "'" + (type.empty() ? j["type"].dump() : type) +
                                         "' is not supported; Ember reads BPE tokenizer.json files "
                                         "(for SentencePiece models pass the .model file)");
  }
  Status st = known_keys(j, "model", {"type", "dropout", "unk_token", "continuing_subword_prefix",
                                      "end_of_word_suffix", "fuse_unk", "byte_fallback",
                                      "ignore_merges", "vocab", "merges"});
  if (!st.ok()) return st;
  if (!(st = must_be_empty(j, "continuing_subword_prefix", "model", "subword prefixes are not byte-level BPE")).ok() ||
      !(st = must_be_empty(j, "end_of_word_suffix", "model", "end-of-word suffixes are not byte-level BPE")).ok() ||
      !(st = get_bool(j, "fuse_unk", "model", false, &m->fuse_unk)).ok() ||
      !(st = get_bool(j, "byte_fallback", "model", false, &m->byte_fallback)).ok() ||
      !(st = get_bool(j, "ignore_merges", "model", false, &m->ignore_merges)).ok())
    return st;
  if (auto d = j.find("dropout"); d != j.end() && !d->is_null()) {
    if (!d->is_number()) return bad("model.dropout", "must be a number or null, got " + d->dump());
    if (d->get<double>() != 0.0)
      return unsupported("model.dropout", d->dump() + ": BPE dropout is random (a training "
                                                      "feature); set it to null for inference");
  }

  auto v = j.find("vocab");
  if (v == j.end() || !v->is_object() || v->empty())
    return bad("model.vocab", "must be a non-empty object of token -> id");
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string where = "model.vocab[" + Json(it.key()).dump() + "]";
    if (it.key().empty()) return bad(where, "empty token");
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxId)
      return bad(where, "id must be an integer in [0, " + std::to_string(kMaxId) + "], got " + it->dump());
    const size_t id = static_cast<size_t>(it->get<int64_t>());
    if (id >= id_owner_.size()) id_owner_.resize(id + 1);
    if (!id_owner_[id].empty())
      return bad(where, "id " + std::to_string(id) + " is also the id of " + Json(id_owner_[id]).dump() +
                            "; each id must name one token");
    id_owner_[id] = it.key();
    m->vocab.emplace(it.key(), static_cast<int32_t>(id));
  }
  m->unk_id = -1;
  if (auto u = j.find("unk_token"); u != j.end() && !u->is_null()) {
    if (!u->is_string()) return bad("model.unk_token", "must be a string or null, got " + u->dump());
    auto it = m->vocab.find(u->get<std::string>());
    if (it == m->vocab.end()) return bad("model.unk_token", u->dump() + " is not in model.vocab");
    m->unk_id = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = m->vocab.find(name);
    m->byte_fallback_ids[b] = it == m->vocab.end() ? -1 : it->second;
  }

  auto mg = j.find("merges");
  if (mg == j.end() || mg->is_null()) return bad("model.merges", "missing (a BPE model lists its merges)");
  if (!mg->is_array()) return bad("model.merges", "must be an array, got " + std::string(mg->type_name()));
  for (size_t rank = 0; rank < mg->size(); ++rank) {
    const Json& e = (*mg)[rank];
    const std::string where = "model.merges[" + std::to_string(rank) + "]";
    std::string a, b;
    if (e.is_string()) {  // "a b": exactly one space, as HF requires
      const std::string& s = e.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
        return bad(where, Json(s).dump() + " must be two tokens separated by one space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return bad(where, "must be \"a b\" or [\"a\", \"b\"], got " + e.dump().substr(0, 80));
    }
    auto ia = m->vocab.find(a), ib = m->vocab.find(b), iab = m->vocab.find(a + b);
    for (const auto& [it, tok] : {std::make_pair(ia, a), std::make_pair(ib, b), std::make_pair(iab, a + b)}) {
      if (it == m->vocab.end())
        return bad(where, "merge of " + Json(a).dump() + " and " + Json(b).dump() + " uses " +
                              Json(tok).dump() + ", which is not in model.vocab (a corrupt or "
                              "mismatched vocab/merges pair)");
    }
    // A repeated pair keeps its later rank, as HF's map does.
    m->merges[(static_cast<uint64_t>(static_cast<uint32_t>(ia->second)) << 32) | static_cast<uint32_t>(ib->second)] =
        bpe::Merge{static_cast<int32_t>(rank), iab->second};
  }
  return Status::Ok();
}

Status Loader::added_tokens(const Json& j, BpeModel* m) {
  if (j.is_null()) return Status::Ok();
  if (!j.is_array()) return bad("added_tokens", "must be an array, got " + std::string(j.type_name()));
  std::vector<AddedToken> all;
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!e.is_object()) return bad(where, "must be an object");
    Status st = known_keys(e, where, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
    if (!st.ok()) return st;
    AddedToken t;
    auto id = e.find("id"), content = e.find("content");
    if (id == e.end() || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > kMaxId)
      return bad(where + ".id", "must be an integer in [0, " + std::to_string(kMaxId) + "]");
    if (content == e.end() || !content->is_string() || content->get_ref<const std::string&>().empty())
      return bad(where + ".content", "must be a non-empty string");
    t.id = static_cast<int32_t>(id->get<int64_t>());
    t.content = content->get<std::string>();
    if (!(st = get_bool(e, "single_word", where, false, &t.single_word)).ok() ||
        !(st = get_bool(e, "lstrip", where, false, &t.lstrip)).ok() ||
        !(st = get_bool(e, "rstrip", where, false, &t.rstrip)).ok() ||
        !(st = get_bool(e, "special", where, false, &t.special)).ok() ||
        !(st = get_bool(e, "normalized", where, !t.special, &t.normalized)).ok())
      return st;
    auto in_vocab = m->vocab.find(t.content);
    if (in_vocab != m->vocab.end() && in_vocab->second != t.id)
      return bad(where, Json(t.content).dump() + " has id " + std::to_string(t.id) +
                            " but model.vocab gives it id " + std::to_string(in_vocab->second));
    if (static_cast<size_t>(t.id) < id_owner_.size() && !id_owner_[t.id].empty() && id_owner_[t.id] != t.content)
      return bad(where, "id " + std::to_string(t.id) + " of " + Json(t.content).dump() +
                            " is already model.vocab's " + Json(id_owner_[t.id]).dump());
    for (const AddedToken& o : all) {
      if (o.id == t.id || o.content == t.content)
        return bad(where, Json(t.content).dump() + " (id " + std::to_string(t.id) +
                              ") repeats an earlier added token's id or content");
    }
    all.push_back(t);
  }
  // Longest first, so the first hit at a position is the longest (leftmost-longest).
  std::stable_sort(all.begin(), all.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (AddedToken& t : all) {
    if (t.single_word && m->word_char == nullptr) {
      auto re = Regex::compile("\\w");
      if (!re.ok()) return re.error();
      m->word_char = std::move(*re);
    }
    (t.normalized ? m->added_normalized : m->added_raw).push_back(std::move(t));
  }
  return Status::Ok();
}

Status Loader::normalizer(const Json& j) {
  if (j.is_null()) return Status::Ok();
  if (j.is_object() && type_of(j) == "Sequence" && j.contains("normalizers") &&
      j["normalizers"].is_array() && j["normalizers"].empty())
    return Status::Ok();
  const std::string type = j.is_object() ? type_of(j) : std::string();
  return unsupported("normalizer", "'" + (type.empty() ? j.dump().substr(0, 60) : type) +
                                       "' is not supported (Ember's byte-level BPE runs without a "
                                       "normalizer, as GPT-2 and Llama 3 do)");
}

Status Loader::pre_tokenizer(const Json& j, const std::string& where, int depth, BpeModel* m,
                             int* byte_levels) {
  if (!j.is_object()) {
    return j.is_null() ? unsupported(where, "null: byte-level BPE needs a ByteLevel pre-tokenizer")
                       : bad(where, "must be an object");
  }
  const std::string type = type_of(j);
  Status st;
  if (type == "Sequence") {
    if (depth > 8) return bad(where, "Sequence nested too deeply");
    if (!(st = known_keys(j, where, {"type", "pretokenizers"})).ok()) return st;
    auto list = j.find("pretokenizers");
    if (list == j.end() || !list->is_array()) return bad(where + ".pretokenizers", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      st = pre_tokenizer((*list)[i], where + ".pretokenizers[" + std::to_string(i) + "]", depth + 1, m, byte_levels);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  PreTokenizerStep step;
  if (type == "ByteLevel") {
    if (!(st = known_keys(j, where, {"type", "add_prefix_space", "trim_offsets", "use_regex"})).ok()) return st;
    bool use_regex = true, trim;
    if (!(st = get_bool(j, "add_prefix_space", where, true, &step.add_prefix_space)).ok() ||
        !(st = get_bool(j, "use_regex", where, true, &use_regex)).ok() ||
        !(st = get_bool(j, "trim_offsets", where, true, &trim)).ok())
      return st;
    if (use_regex) {
      auto re = Regex::compile(kGpt2Pattern);
      if (!re.ok()) return re.error();
      step.regex = std::move(*re);
    }
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    ++*byte_levels;
  } else if (type == "Split") {
    if (!(st = known_keys(j, where, {"type", "pattern", "behavior", "invert"})).ok()) return st;
    step.kind = PreTokenizerStep::Kind::kSplit;
    auto p = j.find("pattern");
    if (p == j.end() || !p->is_object() || p->size() != 1)
      return bad(where + ".pattern", "must be {\"Regex\": ...} or {\"String\": ...}");
    if (p->contains("Regex") && (*p)["Regex"].is_string()) {
      auto re = Regex::compile((*p)["Regex"].get<std::string>());
      if (!re.ok()) return bad(where + ".pattern", re.error().message());
      step.regex = std::move(*re);
    } else if (p->contains("String") && (*p)["String"].is_string() && !(*p)["String"].get<std::string>().empty()) {
      step.literal = (*p)["String"].get<std::string>();
    } else {
      return bad(where + ".pattern", "must be {\"Regex\": \"...\"} or a non-empty {\"String\": \"...\"}");
    }
    static const std::pair<const char*, bpe::SplitBehavior> kBehaviors[] = {
        {"Removed", bpe::SplitBehavior::kRemoved},
        {"Isolated", bpe::SplitBehavior::kIsolated},
        {"MergedWithPrevious", bpe::SplitBehavior::kMergedWithPrevious},
        {"MergedWithNext", bpe::SplitBehavior::kMergedWithNext},
        {"Contiguous", bpe::SplitBehavior::kContiguous}};
    auto b = j.find("behavior");
    const auto* hit = std::find_if(std::begin(kBehaviors), std::end(kBehaviors),
                                   [&](const auto& kb) { return b != j.end() && *b == kb.first; });
    if (hit == std::end(kBehaviors))
      return bad(where + ".behavior", "must be one of Removed, Isolated, MergedWithPrevious, "
                                      "MergedWithNext, Contiguous");
    step.behavior = hit->second;
    if (!(st = get_bool(j, "invert", where, false, &step.invert)).ok()) return st;
  } else {
    return unsupported(where, "pre-tokenizer '" + (type.empty() ? j.dump().substr(0, 60) : type) +
                                  "' is not supported (supported: ByteLevel, Split, Sequence)");
  }
  m->steps.push_back(std::move(step));
  return Status::Ok();
}

Status Loader::decoder(const Json& j, const std::string& where, int depth, int* byte_levels) {
  const std::string type = j.is_object() ? type_of(j) : std::string();
  if (type == "ByteLevel") {
    ++*byte_levels;  // its flags only concern offsets
    return Status::Ok();
  }
  if (type == "Sequence" && depth < 8 && j.contains("decoders") && j["decoders"].is_array()) {
    for (size_t i = 0; i < j["decoders"].size(); ++i) {
      Status st = decoder(j["decoders"][i], where + ".decoders[" + std::to_string(i) + "]", depth + 1, byte_levels);
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }
  return unsupported(where, "'" + (type.empty() ? j.dump().substr(0, 60) : type) +
                                "' is not supported (byte-level BPE decodes with ByteLevel)");
}

// tokenizer.json does not name BOS/EOS (tokenizer_config.json does): BOS is the special token
// the post-processor's template puts first; otherwise both come from the usual names.
void Loader::special_ids(const Json& root, BpeModel* m) {
  const auto id_of = [&](const std::string& name) -> int32_t {
    for (const auto* list : {&m->added_raw, &m->added_normalized})
      for (const AddedToken& t : *list)
        if (t.content == name) return t.id;
    return -1;
  };
  const auto first_of = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (int32_t id = id_of(n); id >= 0) return id;
    return int32_t{-1};
  };
  std::vector<const Json*> procs;
  if (auto pp = root.find("post_processor"); pp != root.end() && pp->is_object()) {
    procs.push_back(&*pp);
    if (auto list = pp->find("processors"); list != pp->end() && list->is_array())
      for (const Json& p : *list) procs.push_back(&p);
  }
  for (const Json* p : procs) {
    if (!p->is_object() || type_of(*p) != "TemplateProcessing") continue;
    auto single = p->find("single");
    if (single == p->end() || !single->is_array() || single->empty() || !(*single)[0].is_object()) continue;
    auto st = (*single)[0].find("SpecialToken");
    if (st != (*single)[0].end() && st->is_object() && st->contains("id") && (*st)["id"].is_string())
      m->bos_id = id_of((*st)["id"].get<std::string>());
  }
  if (m->bos_id < 0) m->bos_id = first_of({"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>"});
  m->eos_id = first_of({"<|end_of_text|>", "<|endoftext|>", "</s>", "<eos>"});
}

}  // namespace

Expected<std::unique_ptr<Tokenizer>> load_bpe_tokenizer(std::string_view json_text,
                                                        const std::string& origin) {
  Json root;
  try {
    root = Json::parse(json_text.begin(), json_text.end());
  } catch (const Json::exception& e) {
    return Status(Error::InvalidArgument, origin + ": not valid JSON (" + e.what() +
                                              "); the file is truncated or corrupt: fetch it again");
  }
  Loader l(origin);
  if (!root.is_object()) return l.bad("top level", "a tokenizer.json is a JSON object");
  auto model = root.find("model");
  if (model == root.end()) return l.bad("model", "missing: this is not a Hugging Face tokenizer.json");
  BpeModel m;
  // The accessors above check types first; the catch turns a missed case into an error.
  try {
    Status st = l.model(*model, &m);
    if (st.ok()) st = l.added_tokens(root.contains("added_tokens") ? root["added_tokens"] : Json(), &m);
    if (st.ok()) st = l.normalizer(root.contains("normalizer") ? root["normalizer"] : Json());
    int byte_levels = 0;
    if (st.ok()) st = l.pre_tokenizer(root.contains("pre_tokenizer") ? root["pre_tokenizer"] : Json(),
                                      "pre_tokenizer", 0, &m, &byte_levels);
    if (st.ok() && byte_levels != 1)
      st = l.unsupported("pre_tokenizer", "has " + std::to_string(byte_levels) +
                                              " ByteLevel steps; byte-level BPE needs exactly one");
    int decoders = 0;
    if (st.ok()) st = l.decoder(root.contains("decoder") ? root["decoder"] : Json(), "decoder", 0, &decoders);
    if (st.ok() && decoders != 1) st = l.unsupported("decoder", "needs exactly one ByteLevel decoder");
    if (!st.ok()) return st;
    l.special_ids(root, &m);
  } catch (const std::exception& e) {
    return Status(Error::InvalidArgument, origin + ": unexpected content (" + e.what() + ")");
  }

  // Id table: model vocab, then added tokens (special ones decode to nothing).
  int64_t max_id = -1, count = 0;
  for (const auto& kv : m.vocab) max_id = std::max<int64_t>(max_id, kv.second);
  for (const auto* list : {&m.added_raw, &m.added_normalized})
    for (const AddedToken& t : *list) max_id = std::max<int64_t>(max_id, t.id);
  count = static_cast<int64_t>(m.vocab.size() + m.added_raw.size() + m.added_normalized.size());
  if (max_id + 1 > 2 * count + 1024) {
    return Status(Error::InvalidArgument,
                  origin + ": ids are sparse: the largest is " + std::to_string(max_id) + " for " +
                      std::to_string(count) + " tokens; the file is corrupt");
  }
  m.bytes.assign(static_cast<size_t>(max_id + 1), std::string());
  for (const auto& kv : m.vocab) m.bytes[kv.second] = decoded_bytes(kv.first);
  for (const auto* list : {&m.added_raw, &m.added_normalized})
    for (const AddedToken& t : *list) m.bytes[t.id] = t.special ? std::string() : decoded_bytes(t.content);
  return std::unique_ptr<Tokenizer>(new BpeTokenizer(std::move(m)));
}

}  // namespace llm
}  // namespace ember
