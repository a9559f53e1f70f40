#!/usr/bin/env python3
"""Which pages of a running process's file mappings are resident: for every mapping whose
path contains one of the given substrings, the resident KiB, and for the first such file the
resident offset ranges (coalesced, largest first). Reads /proc/PID/maps and /proc/PID/pagemap
(root). Used to see what a warm XNNPACK load still touches (docs/benchmarks.md).
Usage: resident_pages.py PID SUBSTRING..."""
import re
import struct
import sys

pid, keys = sys.argv[1], sys.argv[2:]
totals = {}
ranges = []
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for line in maps:
        parts = line.split()
        path = parts[5] if len(parts) > 5 else "[anon]"
        key = next((k for k in keys if k in path), None)
        if key is None:
            continue
        a, b = (int(x, 16) for x in parts[0].split("-"))
        offset = int(parts[2], 16)
        pagemap.seek(a // 4096 * 8)
        entries = pagemap.read((b - a) // 4096 * 8)
        present = [(struct.unpack_from("<Q", entries, i * 8)[0] >> 63) & 1 for i in range((b - a) // 4096)]
        totals[key] = totals.get(key, 0) + 4 * sum(present)
        if key == keys[0]:
            start = None
            for i, p in enumerate(present + [0]):
                if p and start is None:
                    start = i
                if not p and start is not None:
                    ranges.append((offset + start * 4096, (i - start) * 4))
                    start = None
for k in keys:
    print(f"resident {k}: {totals.get(k, 0) / 1024:.1f} MiB")
ranges.sort(key=lambda r: -r[1])
print(f"{keys[0]}: {len(ranges)} resident ranges; largest (offset, KiB):", ranges[:12])
