#!/usr/bin/env python3
"""Trains small reference tokenizers on Debian's fortunes corpus and writes test/llm/data/.

  gpt2_bpe.json         byte-level BPE, GPT-2 pre-tokenizer (ByteLevel use_regex), merges "a b"
  gpt2_bpe_prefix.json  the same model with add_prefix_space, merges [["a","b"]], an lstrip/rstrip
                        special token and a non-special added token
  llama3_bpe.json       Llama-3 style: Sequence[Split(regex), ByteLevel(use_regex=false)],
                        ignore_merges, <|begin_of_text|> template
  tiny_bpe.json         vocab ~300 (a small fuzzing seed): Sequence[Split(" ", MergedWithNext),
                        ByteLevel(add_prefix_space)], single_word and lstrip added tokens
  sp_bpe.model          SentencePiece BPE with byte_fallback
  sp_unigram.model      SentencePiece unigram with byte_fallback
  refs.json             test strings, and for each tokenizer the reference ids (no BOS/EOS) and
                        the reference decode (HF: skip_special_tokens=True)

The GPT-2 tokenizer's ids are also checked against an independent implementation of GPT-2's
original encoder (bytes_to_unicode + regex + bpe() merging all occurrences of the best pair),
so the HF reference itself follows GPT-2's merge semantics.

Needs: pip tokenizers sentencepiece regex; apt fortunes (/usr/share/games/fortunes).
Usage: python3 tools/llm/make_tokenizer_refs.py [OUT_DIR]   (default test/llm/data)
"""
import copy
import glob
import json
import os
import sys
import tempfile

import regex
import sentencepiece as spm
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

FORTUNES = "/usr/share/games/fortunes"
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

TEXTS = [
    "",
    "Hello world",
    "hello, world! How are you today?",
    "don't I'll we've they're she'd it's DON'T",
    "12345 and 3.14159 and 1,000,000",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\n\n\r\nmixed   \n  runs",
    "          ",
    "\n",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587 \ud55c\uad6d\uc5b4",
    "emoji \U0001F600\U0001F44D\U0001F3FD family \U0001F468\u200d\U0001F469\u200d\U0001F467 flag \U0001F1EB\U0001F1F7",
    "<|endoftext|>",
    "before<|endoftext|>after <|endoftext|> spaced",
    "<|endoftext|><|endoftext|>",
    "almost <|endoftext| and <|endoftext|>x",
    "Q: What is a fortune cookie?\nA: A cookie with a fortune in it.",
    "nel\u0085next and nbsp\u00a0here and ideographic\u3000space",
    "x" * 300,
    "   \t  \n   ",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "symbols: @#$%^&*()_+-=[]{}|;:,.<>/?~`",
    "'s 's 'S 'll 'LL",
]
# Strings with this tokenizer's own added tokens.
EXTRA = {
    "gpt2_bpe_prefix.json": ["a <mask> b", "x<mask>y", "say hello world now", "<mask>", "  <mask>  "],
    "llama3_bpe.json": ["<|begin_of_text|>Hi<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nHi"],
    "sp_bpe.model": ["<s>not special</s>"],
    "tiny_bpe.json": ["the cat sat", "cats the scat", "a <sep> b<sep>c", "cat"],
}


def corpus_files():
    files = sorted(f for f in glob.glob(os.path.join(FORTUNES, "*")) if "." not in os.path.basename(f)
                   and os.path.isfile(f))
    if not files:
        sys.exit("make_tokenizer_refs: no fortunes files in %s (apt-get install fortunes)" % FORTUNES)
    return files


def train_bpe(files, pre, vocab_size, specials):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(files, trainer)
    return tok


# GPT-2's original encoder, written from its published description (not HF's code).
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def gpt2_encode(text, vocab, merges):
    ranks = {tuple(m): i for i, m in enumerate(merges)}
    b2u = bytes_to_unicode()
    out = []
    for piece in regex.findall(GPT2_PATTERN, text):
        word = [b2u[b] for b in piece.encode("utf-8")]
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if best not in ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = merged
        out.extend(vocab[w] for w in word)
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "test/llm/data"
    os.makedirs(out_dir, exist_ok=True)
    files = corpus_files()
    tokenizers = {}

    gpt2 = train_bpe(files, pre_tokenizers.ByteLevel(add_prefix_space=False), 1000, ["<|endoftext|>"])
    j = json.loads(gpt2.to_str())
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
    tokenizers["gpt2_bpe.json"] = j

    p = copy.deepcopy(j)
    p["pre_tokenizer"]["add_prefix_space"] = True
    p["model"]["merges"] = [m.split(" ") for m in j["model"]["merges"]]
    tokenizers["gpt2_bpe_prefix.json"] = p

    llama_pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                "<|eot_id|>"]
    llama = train_bpe(files, llama_pre, 1000, specials)
    llama.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", llama.token_to_id("<|begin_of_text|>"))])
    lj = json.loads(llama.to_str())
    lj["model"]["ignore_merges"] = True
    tokenizers["llama3_bpe.json"] = lj

    tiny_pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", behavior="merged_with_next"),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
    tiny = train_bpe(files, tiny_pre, 300, ["<|endoftext|>"])
    tokenizers["tiny_bpe.json"] = json.loads(tiny.to_str())

    refs = {"texts": TEXTS, "tokenizers": {}}
    for name, tj in tokenizers.items():
        tok = Tokenizer.from_str(json.dumps(tj))
        if name == "gpt2_bpe_prefix.json":
            tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, special=True)])
            tok.add_tokens([AddedToken("hello world", special=False)])
        if name == "tiny_bpe.json":
            tok.add_special_tokens([AddedToken("<sep>", lstrip=True, special=True)])
            tok.add_tokens([AddedToken("cat", single_word=True, special=False)])
        path = os.path.join(out_dir, name)
        tok.save(path)
        tok = Tokenizer.from_file(path)  # the references come from the file as written
        texts = TEXTS + EXTRA.get(name, [])
        ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
        refs["tokenizers"][name] = {
            "extra_texts": EXTRA.get(name, []), "ids": ids,
            "decoded": [tok.decode(i, skip_special_tokens=True) for i in ids],
            "bos_with_template": tok.encode("", add_special_tokens=True).ids}
    # GPT-2 semantics: the HF reference agrees with GPT-2's own algorithm on plain text.
    tj = tokenizers["gpt2_bpe.json"]
    merges = [m.split(" ") for m in tj["model"]["merges"]]
    for t, ids in zip(TEXTS, refs["tokenizers"]["gpt2_bpe.json"]["ids"]):
        if "<|" in t:
            continue
        want = gpt2_encode(t, tj["model"]["vocab"], merges)
        if want != ids:
            sys.exit("make_tokenizer_refs: HF differs from GPT-2's algorithm on %r" % t)

    text_file = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")
    with text_file:
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as fh:
                text_file.write(fh.read())
    for name, mtype in (("sp_bpe.model", "bpe"), ("sp_unigram.model", "unigram")):
        prefix = os.path.join(out_dir, name[:-len(".model")])
        # identity normalization: the NFKC table alone would be ~200 KB.
        spm.SentencePieceTrainer.train(
            input=text_file.name, model_prefix=prefix, vocab_size=1000, model_type=mtype,
            byte_fallback=True, character_coverage=0.9995, normalization_rule_name="identity",
            user_defined_symbols=["<sep>"], minloglevel=2, num_threads=1)
        os.remove(prefix + ".vocab")
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        texts = TEXTS + EXTRA.get(name, [])
        ids = [sp.encode(t) for t in texts]
        refs["tokenizers"][name] = {"extra_texts": EXTRA.get(name, []), "ids": ids,
                                    "decoded": [sp.decode(i) for i in ids],
                                    "bos_id": sp.bos_id(), "eos_id": sp.eos_id(),
                                    "vocab_size": sp.get_piece_size()}
    os.remove(text_file.name)
    for name in tokenizers:
        tok = Tokenizer.from_file(os.path.join(out_dir, name))
        refs["tokenizers"][name]["vocab_size"] = tok.get_vocab_size(with_added_tokens=True)
    with open(os.path.join(out_dir, "refs.json"), "w", encoding="utf-8") as fh:
        json.dump(refs, fh, ensure_ascii=True, indent=0)
        fh.write("\n")
    for f in sorted(os.listdir(out_dir)):
        print("%-22s %7d bytes" % (f, os.path.getsize(os.path.join(out_dir, f))))


if __name__ == "__main__":
    main()
