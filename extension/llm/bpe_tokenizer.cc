// Byte-level BPE encode/decode. Loading and validation: bpe_tokenizer_load.cc.
#include "extension/llm/bpe_tokenizer.h"

#include <algorithm>
#include <queue>

#include "extension/llm/utf8.h"

namespace ember {
namespace llm {

namespace {

// Start of the character that ends just before `pos` (text is valid UTF-8).
size_t prev_char_start(std::string_view text, size_t pos) {
  size_t p = pos - 1;
  while (p > 0 && (static_cast<uint8_t>(text[p]) & 0xC0) == 0x80) --p;
  return p;
}

uint32_t code_point_at(std::string_view text, size_t pos) {
  return utf8_decode(text, pos, utf8_char_len(text, pos));
}

// Splits `s` at `matches` (sorted, non-overlapping) as HF's NormalizedString::split does for
// `behavior`, appending the non-empty pieces as [begin, end) ranges.
void split_by(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches,
              bpe::SplitBehavior behavior, bool invert,
              std::vector<std::pair<size_t, size_t>>* out) {
  struct Seg {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Seg> segs;
  size_t prev = 0;
  for (const auto& m : matches) {
    if (m.first != prev) segs.push_back({prev, m.first, invert});
    segs.push_back({m.first, m.second, !invert});
    prev = m.second;
  }
  if (prev != s.size()) segs.push_back({prev, s.size(), invert});

  std::vector<std::pair<size_t, size_t>> pieces;
  bool previous_match = false;
  switch (behavior) {
    case bpe::SplitBehavior::kRemoved:
      for (const Seg& g : segs)
        if (!g.is_match) pieces.emplace_back(g.begin, g.end);
      break;
    case bpe::SplitBehavior::kIsolated:
      for (const Seg& g : segs) pieces.emplace_back(g.begin, g.end);
      break;
    case bpe::SplitBehavior::kMergedWithPrevious:  // a match joins the piece before it
      for (const Seg& g : segs) {
        if (g.is_match && !previous_match && !pieces.empty()) {
          pieces.back().second = g.end;
        } else {
          pieces.emplace_back(g.begin, g.end);
        }
        previous_match = g.is_match;
      }
      break;
    case bpe::SplitBehavior::kMergedWithNext:  // a match joins the piece after it
      for (size_t k = segs.size(); k-- > 0;) {
        const Seg& g = segs[k];
        if (g.is_match && !previous_match && !pieces.empty()) {
          pieces.back().first = g.begin;
        } else {
          pieces.emplace_back(g.begin, g.end);
        }
        previous_match = g.is_match;
      }
      std::reverse(pieces.begin(), pieces.end());
      break;
    case bpe::SplitBehavior::kContiguous:  // runs of matches (or of non-matches) join
      for (const Seg& g : segs) {
        if (g.is_match == previous_match && !pieces.empty()) {
          pieces.back().second = g.end;
        } else {
          pieces.emplace_back(g.begin, g.end);
        }
        previous_match = g.is_match;
      }
      break;
  }
  for (const auto& p : pieces)
    if (p.second > p.first) out->push_back(p);
}

void find_literal(std::string_view s, const std::string& literal,
                  std::vector<std::pair<size_t, size_t>>* matches) {
  matches->clear();
  size_t pos = 0;
  while ((pos = s.find(literal, pos)) != std::string_view::npos) {
    matches->emplace_back(pos, pos + literal.size());
    pos += literal.size();
  }
}

std::string byte_level_map(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(byte_to_unicode(static_cast<uint8_t>(c)), &out);
  return out;
}

}  // namespace

// Leftmost-longest matching of `tokens` (sorted longest first) in the text pieces, with HF's
// single_word, lstrip and rstrip rules; matched tokens become pieces of their own.
void BpeTokenizer::split_added(const std::vector<bpe::AddedToken>& tokens,
                               std::vector<Piece>* pieces) const {
  if (tokens.empty()) return;
  // Bytes that start some token: most positions are skipped without comparing.
  bool starts[256] = {};
  for (const bpe::AddedToken& t : tokens) starts[static_cast<uint8_t>(t.content[0])] = true;
  std::vector<Piece> out;
  for (const Piece& piece : *pieces) {
    if (piece.id >= 0) {
      out.push_back(piece);
      continue;
    }
    const std::string_view s = piece.text;
    size_t start_offset = 0, pos = 0;
    while (pos < s.size()) {
      const bpe::AddedToken* hit = nullptr;
      size_t at = pos;
      for (; at < s.size() && hit == nullptr; ++at) {
        if (!starts[static_cast<uint8_t>(s[at])]) continue;
        for (const bpe::AddedToken& t : tokens) {
          if (s[at] == t.content[0] && s.compare(at, t.content.size(), t.content) == 0) {
            hit = &t;
            break;
          }
        }
      }
      if (hit == nullptr) break;
      size_t start = at - 1, stop = start + hit->content.size();
      pos = stop;  // the search goes on after this match, used or not
      if (hit->single_word) {
        const bool word_before = start > 0 && m_.word_char->matches_at(s, prev_char_start(s, start));
        const bool word_after = stop < s.size() && m_.word_char->matches_at(s, stop);
        if (word_before || word_after) continue;
      }
      if (hit->lstrip) {
        size_t new_start = start;
        while (new_start > 0) {
          const size_t p = prev_char_start(s, new_start);
          if (!is_unicode_whitespace(code_point_at(s, p))) break;
          new_start = p;
        }
        start = std::max(new_start, start_offset);
      }
      if (hit->rstrip) {
        while (stop < s.size() && is_unicode_whitespace(code_point_at(s, stop)))
          stop += utf8_char_len(s, stop);
        pos = stop;
      }
      if (start > start_offset) out.push_back({s.substr(start_offset, start - start_offset), -1});
      out.push_back({s.substr(start, stop - start), hit->id});
      start_offset = stop;
    }
    if (start_offset < s.size()) out.push_back({s.substr(start_offset), -1});
  }
  pieces->swap(out);
}

Status BpeTokenizer::pre_tokenize(std::string_view text, std::vector<std::string>* words) const {
  std::vector<std::string> cur{std::string(text)}, next;
  std::vector<std::pair<size_t, size_t>> matches, ranges;
  for (const bpe::PreTokenizerStep& step : m_.steps) {
    next.clear();
    for (std::string& piece : cur) {
      ranges.clear();
      if (step.kind == bpe::PreTokenizerStep::Kind::kByteLevel) {
        if (step.add_prefix_space && (piece.empty() || piece[0] != ' ')) piece.insert(piece.begin(), ' ');
        if (step.regex != nullptr) {
          Status st = step.regex->find_all(piece, &matches);
          if (!st.ok()) return st;
          split_by(piece, matches, bpe::SplitBehavior::kIsolated, false, &ranges);
        } else {
          ranges.emplace_back(0, piece.size());
        }
        for (const auto& r : ranges)
          next.push_back(byte_level_map(std::string_view(piece).substr(r.first, r.second - r.first)));
        continue;
      }
      if (step.regex != nullptr) {
        Status st = step.regex->find_all(piece, &matches);
        if (!st.ok()) return st;
      } else {
        find_literal(piece, step.literal, &matches);
      }
      split_by(piece, matches, step.behavior, step.invert, &ranges);
      for (const auto& r : ranges) next.push_back(piece.substr(r.first, r.second - r.first));
    }
    cur.swap(next);
  }
  *words = std::move(cur);
  return Status::Ok();
}

// BPE of one pre-token: start from its characters, then repeatedly apply the lowest-ranked
// merge among adjacent symbols (leftmost on ties) until none applies.
void BpeTokenizer::bpe_word(const std::string& word, std::vector<int32_t>* ids) const {
  if (m_.ignore_merges) {
    auto it = m_.vocab.find(word);
    if (it != m_.vocab.end()) {
      ids->push_back(it->second);
      return;
    }
  }
  struct Sym {
    int32_t id, prev, next;
    bool alive;
  };
  std::vector<Sym> syms;
  bool last_unk = false;
  const auto add = [&](int32_t id) {
    const int32_t i = static_cast<int32_t>(syms.size());
    syms.push_back({id, i - 1, -1, true});
    if (i > 0) syms[i - 1].next = i;
  };
  std::string ch;
  for (size_t pos = 0; pos < word.size();) {
    const size_t len = std::max<size_t>(1, utf8_char_len(word, pos));
    ch.assign(word, pos, len);
    pos += len;
    auto it = m_.vocab.find(ch);
    if (it != m_.vocab.end()) {
      add(it->second);
      last_unk = false;
      continue;
    }
    if (m_.byte_fallback &&
        std::all_of(ch.begin(), ch.end(), [&](char b) { return m_.byte_fallback_ids[static_cast<uint8_t>(b)] >= 0; })) {
      for (char b : ch) add(m_.byte_fallback_ids[static_cast<uint8_t>(b)]);
      last_unk = false;
      continue;
    }
    if (m_.unk_id < 0) continue;  // as HF: without an unk token the character is dropped
    if (!(m_.fuse_unk && last_unk)) add(m_.unk_id);
    last_unk = true;
  }

  const auto merge_of = [&](int32_t a, int32_t b) -> const bpe::Merge* {
    auto it = m_.merges.find((static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b));
    return it == m_.merges.end() ? nullptr : &it->second;
  };
  struct Cand {
    int32_t rank, pos;
  };
  const auto later = [](const Cand& a, const Cand& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::priority_queue<Cand, std::vector<Cand>, decltype(later)> heap(later);
  for (size_t i = 0; i + 1 < syms.size(); ++i) {
    if (const bpe::Merge* m = merge_of(syms[i].id, syms[i + 1].id))
      heap.push({m->rank, static_cast<int32_t>(i)});
  }
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& s = syms[c.pos];
    if (!s.alive || s.next < 0) continue;
    Sym& r = syms[s.next];
    const bpe::Merge* m = merge_of(s.id, r.id);
    if (m == nullptr || m->rank != c.rank) continue;  // stale: a neighbour merged first
    s.id = m->new_id;
    r.alive = false;
    s.next = r.next;
    if (r.next >= 0) syms[r.next].prev = c.pos;
    if (s.prev >= 0) {
      if (const bpe::Merge* pm = merge_of(syms[s.prev].id, s.id)) heap.push({pm->rank, s.prev});
    }
    if (s.next >= 0) {
      if (const bpe::Merge* nm = merge_of(s.id, syms[s.next].id)) heap.push({nm->rank, c.pos});
    }
  }
  for (const Sym& s : syms)
    if (s.alive) ids->push_back(s.id);
}

Status BpeTokenizer::encode(std::string_view text, std::vector<int32_t>* ids) const {
  ids->clear();
  const size_t bad = utf8_invalid_offset(text);
  if (bad != text.size()) {
    return Status(Error::InvalidArgument, "text to encode is not valid UTF-8 (byte " +
                                              std::to_string(bad) + "); pass UTF-8 text");
  }
  std::vector<Piece> pieces;
  if (!text.empty()) pieces.push_back({text, -1});
  // As HF: tokens that skip normalization first, then the others in what is left.
  split_added(m_.added_raw, &pieces);
  split_added(m_.added_normalized, &pieces);
  std::vector<std::string> words;
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      ids->push_back(p.id);
      continue;
    }
    Status st = pre_tokenize(p.text, &words);
    if (!st.ok()) {
      ids->clear();
      return st;
    }
    for (const std::string& w : words) bpe_word(w, ids);
  }
  return Status::Ok();
}

std::string_view BpeTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return {};
  return m_.bytes[static_cast<size_t>(id)];
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string bytes;
  for (int32_t id : ids) bytes.append(token_bytes(id));
  return utf8_lossy(bytes);
}

}  // namespace llm
}  // namespace ember
