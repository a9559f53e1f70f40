#!/usr/bin/env python3
"""Trains a small Llama-style model (tools/models/llama_model.py) on Debian's `fortunes` corpus
and writes the model, tokenizer and reference generations Ember's LLM runner uses:

  examples/llm/tokenizer.json          byte-level BPE (PyPI `tokenizers`), vocab 2048,
                                       special token <|endoftext|> (id 0)
  examples/llm/fortunes_llm.pt2        the KV-cache model, torch.export'ed (training IR),
                                       forward(tokens int64 [1, T], input_pos int64 [T])
                                       -> logits float32 [1, T, 2048], T dynamic in 1..256
  examples/llm/metadata.txt            max_seq_len, vocab_size, eos_id, bos_id
                                       (for `ember export --metadata`)
  examples/llm/README.md               what it is, losses, samples
  test/llm/data/generation/greedy.json greedy generations (prefill + one call per token)
  test/llm/data/generation/prefill_logits_0.npy
                                       float32 [vocab]: last-position prefill logits, prompt 0

Corpus: /usr/share/games/fortunes/* without an extension (apt-get install fortunes), fortunes
separated by lines holding only "%"; overstrike sequences (x BACKSPACE y) are reduced to the
struck-over character. Each fortune is followed by <|endoftext|>; that token also starts a
prompt (GPT-2 style: bos_id = eos_id = 0), so a generation is "a fortune that starts with ...".
5% of the fortunes (seeded shuffle) are held out for validation.

Stages (all by default, in one process):
  prepare   tokenizer + tokenized corpus (train.npy / val.npy, uint16) into --data-dir
  train     AdamW, warmup + cosine LR, random 256-token windows of the training stream;
            keeps the weights of the best validation loss; saves --ckpt (state_dict + config +
            loss history; keep it out of the repository)
  export    torch.export with T dynamic, checks the program against eager, greedy references

Usage:
  python3 tools/models/train_fortunes_llm.py --device cuda|cpu --steps N [--out-dir examples/llm]
      [--ref-dir test/llm/data/generation] [--ckpt /tmp/fortunes_llm_state.pt]
  python3 tools/models/train_fortunes_llm.py --prepare-only --data-dir DIR
  python3 tools/models/train_fortunes_llm.py --train-only --data-dir DIR --device cuda --steps N
  python3 tools/models/train_fortunes_llm.py --export-only CHECKPOINT
"""
import argparse
import json
import math
import os
import random
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_model import Llama, LlamaConfig  # noqa: E402

CORPUS = "/usr/share/games/fortunes"
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EOS = "<|endoftext|>"
PROMPTS = ["The best way to", "A computer", "Love is", "Q: What is"]
MAX_NEW = 48
SEED = 1234


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


# ---------------------------------------------------------------------------------------------
# corpus and tokenizer

def read_fortunes():
    if not os.path.isdir(CORPUS):
        sys.exit(f"{CORPUS} not found: apt-get install fortunes")
    names = sorted(n for n in os.listdir(CORPUS)
                   if "." not in n and os.path.isfile(os.path.join(CORPUS, n)))
    fortunes = []
    for name in names:
        with open(os.path.join(CORPUS, name), "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
        text = re.sub(r".\x08", "", text)  # overstrike: keep the last character
        for chunk in re.split(r"^%[ \t]*$", text, flags=re.M):
            lines = [line.rstrip() for line in chunk.strip("\n").split("\n")]
            body = "\n".join(lines).strip("\n")
            if body.strip():
                fortunes.append(body)
    return names, fortunes


def split_fortunes(fortunes, val_frac=0.05):
    order = np.random.RandomState(SEED).permutation(len(fortunes))
    n_val = int(round(len(fortunes) * val_frac))
    val = [fortunes[i] for i in sorted(order[:n_val])]
    train = [fortunes[i] for i in order[n_val:]]  # shuffled order: topics mix in the stream
    return train, val


def train_tokenizer(texts, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


def encode_stream(tok, texts, eos_id):
    ids = []
    for enc in tok.encode_batch(texts):
        ids.extend(enc.ids)
        ids.append(eos_id)
    return np.asarray(ids, dtype=np.uint16)


def prepare(args):
    names, fortunes = read_fortunes()
    train, val = split_fortunes(fortunes)
    # The tokenizer is trained on the training fortunes only (validation stays unseen).
    tok = train_tokenizer(train, args.vocab)
    eos_id = tok.token_to_id(EOS)
    os.makedirs(args.out_dir, exist_ok=True)
    tok.save(os.path.join(args.out_dir, "tokenizer.json"))
    os.makedirs(args.data_dir, exist_ok=True)
    tr, va = encode_stream(tok, train, eos_id), encode_stream(tok, val, eos_id)
    np.save(os.path.join(args.data_dir, "train.npy"), tr)
    np.save(os.path.join(args.data_dir, "val.npy"), va)
    info = {"files": len(names), "fortunes": len(fortunes), "train_fortunes": len(train),
            "val_fortunes": len(val), "train_tokens": int(tr.size), "val_tokens": int(va.size),
            "chars": sum(len(f) for f in fortunes), "eos_id": eos_id,
            "vocab_size": tok.get_vocab_size()}
    with open(os.path.join(args.data_dir, "info.json"), "w") as f:
        json.dump(info, f, indent=1)
    print("prepared:", json.dumps(info))
    return info


# ---------------------------------------------------------------------------------------------
# training

def make_config(args):
    return LlamaConfig(vocab_size=args.vocab, dim=args.dim, n_layers=args.layers,
                       n_heads=args.heads, n_kv_heads=args.kv_heads, hidden_dim=args.hidden,
                       max_seq_len=args.max_seq, dropout=args.dropout)


@torch.no_grad()
def evaluate(model, data, seq, device, batch=32):
    """Mean token loss over all non-overlapping windows of `data` (int64 tensor on device)."""
    model.eval()
    n = (data.numel() - 1) // seq
    total, count = 0.0, 0
    for i in range(0, n, batch):
        idx = torch.arange(i, min(i + batch, n), device=device) * seq
        off = torch.arange(seq + 1, device=device)
        chunk = data[idx[:, None] + off[None, :]]
        logits = model.forward_train(chunk[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                               chunk[:, 1:].reshape(-1), reduction="sum")
        total += loss.item()
        count += chunk[:, 1:].numel()
    model.train()
    return total / count


def train(args):
    seed_everything(SEED)
    device = torch.device(args.device)
    tr = torch.from_numpy(np.load(os.path.join(args.data_dir, "train.npy")).astype(np.int64))
    va = torch.from_numpy(np.load(os.path.join(args.data_dir, "val.npy")).astype(np.int64))
    with open(os.path.join(args.data_dir, "info.json")) as f:
        info = json.load(f)
    tr, va = tr.to(device), va.to(device)
    cfg = make_config(args)
    model = Llama(cfg).to(device)
    print(f"params {model.num_params():,}  train tokens {tr.numel():,}  val tokens {va.numel():,}"
          f"  device {device}  torch {torch.__version__}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), fused=device.type == "cuda")
    warmup = min(200, args.steps // 10)

    def lr_at(step):
        if step < warmup:
            return args.lr * (step + 1) / warmup
        prog = (step - warmup) / max(1, args.steps - warmup)
        return args.min_lr + 0.5 * (args.lr - args.min_lr) * (1 + math.cos(math.pi * prog))

    gen = torch.Generator(device=device)
    gen.manual_seed(SEED)
    seq = cfg.max_seq_len
    off = torch.arange(seq + 1, device=device)
    use_bf16 = device.type == "cuda"
    history, best = [], None
    t0 = time.time()
    model.train()
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            val_loss = evaluate(model, va, seq, device)
            # training loss on a fixed sample of training windows, same mode as validation
            g = torch.Generator().manual_seed(SEED + 1)
            starts = torch.randint(0, tr.numel() - seq - 1, (256,), generator=g) // seq * seq
            train_loss = evaluate_windows(model, tr, starts.to(device), seq, device)
            rec = {"step": step, "train_loss": train_loss, "val_loss": val_loss,
                   "lr": lr_at(min(step, args.steps - 1)), "time_s": round(time.time() - t0, 1)}
            history.append(rec)
            print(json.dumps(rec), flush=True)
            if best is None or val_loss < best["val_loss"]:
                best = dict(rec)
                best_state = {k: v.detach().to("cpu", copy=True)
                              for k, v in model.train_state_dict().items()}
        if step == args.steps:
            break
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        starts = torch.randint(0, tr.numel() - seq - 1, (args.batch,), device=device,
                               generator=gen)
        chunk = tr[starts[:, None] + off[None, :]]
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16):
            logits = model.forward_train(chunk[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, cfg.vocab_size),
                               chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    ckpt = {"config": cfg.to_dict(), "state_dict": best_state, "best": best,
            "history": history, "data": info, "torch": torch.__version__,
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu",
            "args": {k: v for k, v in vars(args).items()},
            "train_time_s": round(time.time() - t0, 1)}
    os.makedirs(os.path.dirname(os.path.abspath(args.ckpt)), exist_ok=True)
    torch.save(ckpt, args.ckpt)
    print(f"best: {json.dumps(best)}; saved {args.ckpt}", flush=True)
    return args.ckpt


@torch.no_grad()
def evaluate_windows(model, data, starts, seq, device, batch=32):
    model.eval()
    off = torch.arange(seq + 1, device=device)
    total, count = 0.0, 0
    for i in range(0, starts.numel(), batch):
        chunk = data[starts[i:i + batch, None] + off[None, :]]
        logits = model.forward_train(chunk[:, :-1])
        total += F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                 chunk[:, 1:].reshape(-1), reduction="sum").item()
        count += chunk[:, 1:].numel()
    model.train()
    return total / count


# ---------------------------------------------------------------------------------------------
# export and references

def load_model(ckpt_path):
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
    cfg = LlamaConfig(**{**ckpt["config"], "dropout": 0.0})
    model = Llama(cfg)
    missing, unexpected = model.load_state_dict(ckpt["state_dict"], strict=False)
    assert not unexpected and all(k.endswith("_cache") for k in missing), (missing, unexpected)
    model.eval()
    return model, cfg, ckpt


@torch.no_grad()
def greedy(model, prompt_ids, eos_id, max_new):
    """As a runtime does it: one prefill call, then one call per token; argmax."""
    model.reset_cache()
    p = len(prompt_ids)
    logits = model(torch.tensor([prompt_ids]), torch.arange(p))
    prefill_last = logits[0, -1].clone()
    out, margins = [], []

    def pick(last):
        top = last.topk(2).values
        margins.append(float(top[0] - top[1]))
        return int(last.argmax())

    nxt = pick(logits[0, -1])
    for i in range(max_new):
        if nxt == eos_id:
            break
        out.append(nxt)
        if p + i + 1 > model.cfg.max_seq_len or i + 1 == max_new:
            break
        logits = model(torch.tensor([[nxt]]), torch.tensor([p + i]))
        nxt = pick(logits[0, -1])
    return out, prefill_last, min(margins)


@torch.no_grad()
def sample(model, prompt_ids, eos_id, max_new, temperature, gen):
    model.reset_cache()
    p = len(prompt_ids)
    logits = model(torch.tensor([prompt_ids]), torch.arange(p))
    out = []
    for i in range(max_new):
        probs = torch.softmax(logits[0, -1] / temperature, dim=-1)
        nxt = int(torch.multinomial(probs, 1, generator=gen))
        if nxt == eos_id:
            break
        out.append(nxt)
        if p + i + 1 >= model.cfg.max_seq_len:
            break
        logits = model(torch.tensor([[nxt]]), torch.tensor([p + i]))
    return out


def graph_ops(ep):
    return sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})


def export(args, ckpt_path):
    from tokenizers import Tokenizer
    seed_everything(SEED)
    model, cfg, ckpt = load_model(ckpt_path)
    tok_path = os.path.join(args.out_dir, "tokenizer.json")
    tok = Tokenizer.from_file(tok_path)
    eos_id = tok.token_to_id(EOS)
    bos_id = eos_id  # prompts start with <|endoftext|>, as every fortune in training did
    assert tok.get_vocab_size() == cfg.vocab_size, (tok.get_vocab_size(), cfg.vocab_size)

    # -- export: T dynamic in 1..max_seq, one symbol for tokens dim 1 and input_pos dim 0
    model.reset_cache()
    t_dim = torch.export.Dim("T", min=1, max=cfg.max_seq_len)
    ex_tokens = torch.randint(0, cfg.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
    ex_pos = torch.arange(8)
    t0 = time.time()
    ep = torch.export.export(model, (ex_tokens, ex_pos),
                             dynamic_shapes={"tokens": {1: t_dim}, "input_pos": {0: t_dim}})
    export_s = time.time() - t0
    pt2 = os.path.join(args.out_dir, "fortunes_llm.pt2")
    torch.export.save(ep, pt2)
    ops = graph_ops(ep)
    print(f"exported in {export_s:.1f}s -> {pt2} ({os.path.getsize(pt2):,} bytes)")
    print("graph ops:", ", ".join(ops))
    print("range constraints:", {str(k): str(v) for k, v in ep.range_constraints.items()})

    # -- the saved program against eager: prefill of a real prompt, then decode steps, with the
    #    program's own cache state carried over between calls (as a runtime runs it)
    loaded = torch.export.load(pt2).module()
    prompt_ids = [bos_id] + tok.encode(PROMPTS[0]).ids
    p = len(prompt_ids)
    model.reset_cache()
    max_diff = 0.0
    with torch.no_grad():
        calls = [(torch.tensor([prompt_ids]), torch.arange(p))]
        calls += [(torch.tensor([[7 + i]]), torch.tensor([p + i])) for i in range(4)]
        calls += [(torch.randint(0, cfg.vocab_size, (1, 16)), torch.arange(p + 4, p + 20))]
        for toks, pos in calls:
            a, b = model(toks, pos), loaded(toks, pos)
            max_diff = max(max_diff, (a - b).abs().max().item())
        # the cache path equals the training path on a fresh cache
        model.reset_cache()
        ids = torch.tensor([prompt_ids + list(range(10, 40))])
        d_train = (model(ids, torch.arange(ids.shape[1])) - model.forward_train(ids)).abs().max()
    print(f"exported vs eager max |diff| over prefill + decode calls: {max_diff:.3g}; "
          f"cache forward vs forward_train: {d_train.item():.3g}")
    assert max_diff < 1e-4 and d_train < 1e-4

    # -- greedy references
    os.makedirs(args.ref_dir, exist_ok=True)
    results = []
    for i, prompt in enumerate(PROMPTS):
        ids = [bos_id] + tok.encode(prompt).ids
        gen_ids, prefill_last, margin = greedy(model, ids, eos_id, MAX_NEW)
        text = tok.decode(gen_ids)
        results.append({"prompt": prompt, "prompt_ids": ids, "generated_ids": gen_ids,
                        "stopped_at_eos": len(gen_ids) < MAX_NEW,
                        "min_top2_logit_margin": round(margin, 4), "text": text})
        if i == 0:
            np.save(os.path.join(args.ref_dir, "prefill_logits_0.npy"),
                    prefill_last.numpy().astype(np.float32))
        print(f"greedy {prompt!r} -> {text!r}")
    ref = {"model": "examples/llm/fortunes_llm.pt2", "tokenizer": "examples/llm/tokenizer.json",
           "eos_id": eos_id, "bos_id": bos_id, "max_seq_len": cfg.max_seq_len,
           "vocab_size": cfg.vocab_size, "max_new_tokens": MAX_NEW,
           "procedure": "prompt_ids = [bos_id] + tokenizer.encode(prompt); one call with "
                        "tokens=[prompt_ids], input_pos=arange(P); then one call per token "
                        "(T=1, input_pos=[P+i]) with the previous argmax; stop at eos_id "
                        "(not included) or after max_new_tokens; cache reset between prompts",
           "prefill_logits_0": "prefill_logits_0.npy: logits[0, -1] of prompt 0's prefill call",
           "min_top2_logit_margin": "smallest gap between the best and second-best logit over "
                                    "the greedy steps of a prompt (how robust its argmax path "
                                    "is to float rounding differences)",
           "torch": torch.__version__, "generations": results}
    text = json.dumps(ref, indent=1, ensure_ascii=False)
    text = re.sub(r"\[\s+([-0-9,\s]+?)\s+\]",  # id lists on one line
                  lambda m: "[" + ", ".join(m.group(1).split(",")).replace("  ", " ")
                  .replace("\n", "").replace(" ,", ",") + "]", text)
    text = re.sub(r"\[([-0-9, ]+)\]", lambda m: "[" + ", ".join(
        x.strip() for x in m.group(1).split(",")) + "]", text)
    assert json.loads(text) == ref
    with open(os.path.join(args.ref_dir, "greedy.json"), "w") as f:
        f.write(text + "\n")

    # -- temperature samples for the README
    gen = torch.Generator().manual_seed(SEED)
    samples = []
    for prompt in PROMPTS:
        ids = [bos_id] + tok.encode(prompt).ids
        samples.append((prompt, tok.decode(sample(model, ids, eos_id, 64, 0.8, gen))))
    for prompt, text in samples:
        print(f"T=0.8 {prompt!r} -> {text!r}")

    with open(os.path.join(args.out_dir, "metadata.txt"), "w") as f:
        f.write(f"max_seq_len={cfg.max_seq_len}\nvocab_size={cfg.vocab_size}\n"
                f"eos_id={eos_id}\nbos_id={bos_id}\n")
    write_readme(args, cfg, ckpt, model, results, samples, ops, pt2, tok_path, eos_id)


def write_readme(args, cfg, ckpt, model, results, samples, ops, pt2, tok_path, eos_id):
    best, data = ckpt["best"], ckpt["data"]
    a = ckpt["args"]

    def block(prompt, text):
        body = (prompt + text).rstrip("\n")
        return "```\n" + body + "\n```\n"

    lines = [
        "# fortunes_llm: a small model that writes text",
        "",
        "A Llama-architecture decoder (`tools/models/llama_model.py`) trained from scratch on",
        "Debian's `fortunes` corpus (`/usr/share/games/fortunes`, "
        f"{data['fortunes']:,} fortunes, {data['chars'] / 1e6:.1f} MB of English text).",
        "It is tiny and writes fortune-cookie-flavoured English, mostly grammatical, rarely",
        "sensible: it is here to exercise Ember's LLM path (KV cache, dynamic sequence",
        "length, tokenizer, sampling), not to be clever.",
        "",
        "| file | what |",
        "| --- | --- |",
        f"| `fortunes_llm.pt2` | `torch.export` program ({os.path.getsize(pt2) / 1e6:.1f} MB, "
        f"float32): `forward(tokens int64 [1, T], input_pos int64 [T]) -> logits float32 "
        f"[1, T, {cfg.vocab_size}]`, T dynamic in 1..{cfg.max_seq_len} |",
        f"| `tokenizer.json` | byte-level BPE (Hugging Face `tokenizers`), "
        f"{cfg.vocab_size} tokens, `{EOS}` = id {eos_id} "
        f"({os.path.getsize(tok_path) / 1e3:.0f} KB) |",
        "| `metadata.txt` | `max_seq_len`, `vocab_size`, `eos_id`, `bos_id` for "
        "`ember export --metadata` |",
        "",
        "## Model",
        "",
        f"{model.num_params():,} parameters (output head tied to the token embedding): "
        f"dim {cfg.dim}, {cfg.n_layers} layers, {cfg.n_heads} query heads and "
        f"{cfg.n_kv_heads} key/value heads (grouped-query attention) of size {cfg.head_dim}, "
        f"SiLU-gated MLP of {cfg.hidden_dim}, RMSNorm, rotary position embeddings "
        f"(theta {cfg.rope_theta:g}), context {cfg.max_seq_len} tokens.",
        "",
        "Each layer keeps its KV cache in buffers (`layers.<i>.k_cache`, `layers.<i>.v_cache`,",
        f"[1, {cfg.n_kv_heads}, {cfg.max_seq_len}, {cfg.head_dim}]) written in place with "
        "`index_copy_` at `input_pos`; query t attends",
        "to cache positions <= `input_pos[t]`. A runtime calls the program once with the",
        "whole prompt (`input_pos = 0..P-1`), then once per generated token (T = 1,",
        "`input_pos = [P + i]`); the cache carries over between calls and must be reset",
        "(zeroed, or simply overwritten from position 0) for a new text.",
        "",
        f"Prompts start with `{EOS}` (id {eos_id}; `bos_id` in `metadata.txt`): in training every",
        "fortune followed one, so the model reads the prompt as the start of a fortune.",
        "Generation stops at the same token.",
        "",
        "Graph ops (training IR): " + ", ".join(f"`{o.replace('aten.', '')}`" for o in ops) + ".",
        "",
        "## Training",
        "",
        f"{data['train_fortunes']:,} fortunes for training ({data['train_tokens']:,} tokens), "
        f"{data['val_fortunes']:,} held out ({data['val_tokens']:,} tokens; 5%, seeded).",
        f"AdamW (lr {a['lr']:g} -> {a['min_lr']:g}, cosine, warmup, weight decay "
        f"{a['weight_decay']:g}), dropout {a['dropout']:g}, batches of {a['batch']} random "
        f"{cfg.max_seq_len}-token windows, {a['steps']:,} steps, bf16 autocast on the GPU "
        f"({ckpt['device']}, PyTorch {ckpt['torch']}, {ckpt['train_time_s']:.0f} s). The "
        f"weights kept are those of the best validation loss (step {best['step']:,}; "
        "validation: every held-out window, train: 256 fixed training windows, dropout off):",
        "",
        "| | loss (nats/token) | perplexity |",
        "| --- | --- | --- |",
        f"| train | {best['train_loss']:.3f} | {math.exp(best['train_loss']):.1f} |",
        f"| validation | {best['val_loss']:.3f} | {math.exp(best['val_loss']):.1f} |",
        "",
        "Made with (training ran on a GPU machine; `--device cpu` works, slowly):",
        "",
        "```",
        "python3 tools/models/train_fortunes_llm.py --prepare-only --data-dir /tmp/fortunes_data",
        f"python3 tools/models/train_fortunes_llm.py --train-only --data-dir /tmp/fortunes_data "
        f"--device cuda --steps {a['steps']} --dropout {a['dropout']:g} --batch {a['batch']} "
        "--ckpt /tmp/fortunes_llm_state.pt",
        "python3 tools/models/train_fortunes_llm.py --export-only /tmp/fortunes_llm_state.pt",
        "```",
        "",
        "or in one go: `python3 tools/models/train_fortunes_llm.py --device cuda|cpu --steps N`.",
        f"The export ran with PyTorch {torch.__version__}.",
        "",
        f"## Greedy generations ({MAX_NEW} new tokens at most)",
        "",
        "These are `test/llm/data/generation/greedy.json`: a runtime's greedy output must",
        "match them token for token.",
        "",
    ]
    for r in results:
        lines.append(block(r["prompt"], r["text"]))
    lines += ["## Sampled at temperature 0.8 (64 new tokens at most)", "",
              f"Softmax of logits / 0.8, `torch.multinomial` with a generator seeded {SEED}.", ""]
    for prompt, text in samples:
        lines.append(block(prompt, text))
    with open(os.path.join(args.out_dir, "README.md"), "w") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr", type=float, default=1e-4)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=192)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--max-seq", type=int, default=256)
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "examples", "llm"))
    ap.add_argument("--ref-dir", default=os.path.join(ROOT, "test", "llm", "data", "generation"))
    ap.add_argument("--data-dir", default="/tmp/fortunes_llm_data")
    ap.add_argument("--ckpt", default="/tmp/fortunes_llm_state.pt")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--prepare-only", action="store_true")
    mode.add_argument("--train-only", action="store_true",
                      help="train from --data-dir (made by --prepare-only); no tokenizers needed")
    mode.add_argument("--export-only", metavar="CHECKPOINT")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))

    if args.export_only:
        export(args, args.export_only)
        return
    if not args.train_only:
        prepare(args)
        if args.prepare_only:
            return
    ckpt = train(args)
    if not args.train_only:
        export(args, ckpt)


if __name__ == "__main__":
    main()
