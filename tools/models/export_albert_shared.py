#!/usr/bin/env python3
"""Exports an ALBERT encoder whose 12 layers share one set of weights (hidden 384, 6 heads,
FFN 1536, input ids [1, 64], seeded random weights) to OUT/model.pt2 with input_0.npy and
eager output_0.npy: the benchmark for XNNPACK's shared packed-weights cache (each shared
filter feeds 12 fully connected nodes). docs/benchmarks.md has the command.

Usage: export_albert_shared.py [OUT]   (default /tmp/albert_shared)
"""
import os
import sys

import numpy as np
import torch
from transformers import AlbertConfig, AlbertModel

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/albert_shared"
torch.manual_seed(0)
cfg = AlbertConfig(vocab_size=1000, embedding_size=128, hidden_size=384, num_hidden_layers=12,
                   num_attention_heads=6, intermediate_size=1536, max_position_embeddings=128)
model = AlbertModel(cfg).eval()
ids = torch.randint(0, 1000, (1, 64))
os.makedirs(out, exist_ok=True)
torch.export.save(torch.export.export(model, (ids,)), os.path.join(out, "model.pt2"))
np.save(os.path.join(out, "input_0.npy"), ids.numpy())
with torch.no_grad():
    np.save(os.path.join(out, "output_0.npy"), model(ids).last_hidden_state.numpy())
print(f"wrote {out}: {sum(p.numel() for p in model.parameters()):,} parameters")
