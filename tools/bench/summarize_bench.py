#!/usr/bin/env python3
"""Prints a Markdown table of median latencies (ms) from the JSON files device_compare.sh
writes: OUT/<model>.<engine>.t<threads>.json, engines vulkan/vulkan16/xnnpack/portable (ember bench)
and torch/torch_cuda/ort (torch_compare.py). Usage: summarize_bench.py OUT"""
import collections
import glob
import json
import os
import re
import sys

rows = collections.defaultdict(dict)
columns = set()
for path in glob.glob(os.path.join(sys.argv[1], "*.t*.json")):
    m = re.match(r"(.+)\.(vulkan|vulkan16|xnnpack|portable|torch|torch_cuda|ort)\.t(\d+)\.json$", os.path.basename(path))
    if not m:
        continue
    with open(path) as f:
        lat = json.load(f)["latency_ms"]
    col = (m.group(2), int(m.group(3)))
    columns.add(col)
    rows[m.group(1)][col] = lat["median"]
order = ["vulkan", "vulkan16", "xnnpack", "portable", "torch", "torch_cuda", "ort"]
cols = sorted(columns, key=lambda c: (order.index(c[0]), c[1]))
names = {"vulkan": "Ember Vulkan (GPU)", "vulkan16": "Ember Vulkan fp16 storage (GPU)",
         "torch_cuda": "PyTorch eager CUDA (GPU)", "xnnpack": "Ember XNNPACK", "portable": "Ember portable",
         "torch": "PyTorch eager", "ort": "onnxruntime"}
print("| model | " + " | ".join(f"{names[e]}, {t} thr" for e, t in cols) + " |")
print("|---|" + "---|" * len(cols))
for model in sorted(rows):
    print(f"| {model} | " + " | ".join(f"{rows[model][c]:.2f}" if c in rows[model] else "-" for c in cols) + " |")
