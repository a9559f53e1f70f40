#!/usr/bin/env python3
"""The benchmark Llama configurations as GGUF files for llama.cpp, side by side with Ember
(docs/llm.md; PyPI torch + llama.cpp's own gguf-py; not in CI).

Builds tools/models/llama_model.Llama with the preset and seed tools/models/make_llama_bench.py
uses (the same weights Ember's programs hold) and writes OUT_DIR/llama_<preset>.f32.gguf:
llama.cpp's "llama" architecture (token_embd / blk.N.attn_q|k|v|output / ffn_gate|up|down /
*_norm, the output head tied to the embedding as in the Ember program), with a placeholder
SentencePiece-style vocabulary of the same size (llama-bench feeds token ids; the text is
never read). Speed only: the rotary layout is not permuted to llama.cpp's convention, so its
logits are not the PyTorch model's (every weight is still read once per token, which is what
a decode rate measures). Then quantize and time with llama.cpp's tools, e.g.

  python3 tools/llm/llama_cpp_peer.py --preset 1b --out-dir /tmp/peer --gguf-py LLAMA_CPP/gguf-py
  llama-quantize /tmp/peer/llama_1b.f32.gguf /tmp/peer/llama_1b.q4_0.gguf Q4_0
  llama-bench -m /tmp/peer/llama_1b.q4_0.gguf -p 64 -n 32 -t 1,4,16

(tools/llm/bench_llama_cpp.sh runs all of it.)
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from llama_model import Llama  # noqa: E402
from make_llama_bench import PRESETS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", choices=sorted(PRESETS), required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gguf-py", required=True, help="llama.cpp's gguf-py directory")
    args = ap.parse_args()
    sys.path.insert(0, args.gguf_py)
    import gguf  # noqa: E402

    torch.manual_seed(args.seed)  # as make_llama_bench.py: the same weights
    cfg = PRESETS[args.preset]
    model = Llama(cfg).eval()
    os.makedirs(args.out_dir, exist_ok=True)
    path = os.path.join(args.out_dir, f"llama_{args.preset}.f32.gguf")
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"ember-bench-{args.preset}")
    w.add_context_length(cfg.max_seq_len)
    w.add_embedding_length(cfg.dim)
    w.add_block_count(cfg.n_layers)
    w.add_feed_forward_length(cfg.hidden_dim)
    w.add_head_count(cfg.n_heads)
    w.add_head_count_kv(cfg.n_kv_heads)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_rope_dimension_count(cfg.head_dim)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Placeholder vocabulary: <unk> <s> </s>, the 256 byte tokens, then fillers.
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    tokens += [f"t{i}" for i in range(cfg.vocab_size - len(tokens))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    types += [gguf.TokenType.BYTE] * 256 + [gguf.TokenType.NORMAL] * (cfg.vocab_size - 259)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * cfg.vocab_size)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def t(name, tensor):
        w.add_tensor(name, tensor.detach().float().numpy().astype(np.float32))

    t("token_embd.weight", model.tok.weight)
    t("output_norm.weight", model.norm.weight)
    for i, b in enumerate(model.layers):
        t(f"blk.{i}.attn_norm.weight", b.attn_norm.weight)
        t(f"blk.{i}.attn_q.weight", b.wq.weight)
        t(f"blk.{i}.attn_k.weight", b.wk.weight)
        t(f"blk.{i}.attn_v.weight", b.wv.weight)
        t(f"blk.{i}.attn_output.weight", b.wo.weight)
        t(f"blk.{i}.ffn_norm.weight", b.ffn_norm.weight)
        t(f"blk.{i}.ffn_gate.weight", b.w1.weight)
        t(f"blk.{i}.ffn_up.weight", b.w3.weight)
        t(f"blk.{i}.ffn_down.weight", b.w2.weight)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {os.path.getsize(path) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
