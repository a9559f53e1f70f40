#!/usr/bin/env python3
"""Llama-architecture benchmark programs with seeded weights (no download), for docs/llm.md.

Writes OUT_DIR/llama_<preset>.pt2 (torch.export of tools/models/llama_model.Llama's cache
forward: tokens int64 [1, T], input_pos int64 [T], T dynamic in 1..max_seq) and
OUT_DIR/llama_<preset>.metadata (the `ember export --metadata` arguments). Random weights say
nothing about text quality; they are only for speed (every byte of every weight is read per
decoded token whatever its value).

  python3 tools/models/make_llama_bench.py --preset 110m --out-dir /tmp/llm_bench

Presets (parameters counted with the tied embedding once):
  15m   dim 288,  6 layers, 6 heads / 6 kv,  hidden 768,  vocab 32000  (~15M, llama2.c's stories15M shape)
  110m  dim 768, 12 layers, 12 heads / 12 kv, hidden 2048, vocab 32000 (~110M, stories110M's shape)
  1b    dim 2048, 22 layers, 32 heads / 4 kv, hidden 5632, vocab 32000 (~1.1B, TinyLlama-1.1B's shape)
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_model import Llama, LlamaConfig  # noqa: E402

PRESETS = {
    "15m": LlamaConfig(vocab_size=32000, dim=288, n_layers=6, n_heads=6, n_kv_heads=6, hidden_dim=768, max_seq_len=256),
    "110m": LlamaConfig(vocab_size=32000, dim=768, n_layers=12, n_heads=12, n_kv_heads=12, hidden_dim=2048, max_seq_len=256),
    "1b": LlamaConfig(vocab_size=32000, dim=2048, n_layers=22, n_heads=32, n_kv_heads=4, hidden_dim=5632, max_seq_len=256),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    cfg = PRESETS[args.preset]
    model = Llama(cfg).eval()
    os.makedirs(args.out_dir, exist_ok=True)
    t = torch.export.Dim("t", min=1, max=cfg.max_seq_len)
    example = (torch.zeros(1, 8, dtype=torch.int64), torch.arange(8, dtype=torch.int64))
    with torch.no_grad():
        ep = torch.export.export(model, example, dynamic_shapes=({1: t}, {0: t}))
    path = os.path.join(args.out_dir, f"llama_{args.preset}.pt2")
    torch.export.save(ep, path)
    meta = f"--metadata max_seq_len={cfg.max_seq_len} --metadata vocab_size={cfg.vocab_size} --metadata bos_id=-1\n"
    with open(os.path.join(args.out_dir, f"llama_{args.preset}.metadata"), "w") as f:
        f.write(meta)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    print(f"{path}: {model.num_params() / 1e6:.1f}M parameters, {weight_bytes / 2**20:.0f} MiB fp32 weights")


if __name__ == "__main__":
    main()
