"""What the Python package adds to a call: Module.forward's median latency against `ember bench`'s
on the same .pte, same threads, in one run (ratios, not absolute claims).

    python3 tools/bench/python_overhead.py PROGRAM.pte [...] [--threads N] [--iterations N]

Each program's inputs are zeros of its declared shapes (numpy), bound zero-copy; the outputs are
copied into new arrays, as Module.forward always does. Prints one row per program: ember bench
median, Module.forward median, their difference (the per-call cost of ctypes, binding and the
output copies) and ratio.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import numpy as np

import ember


def bench_median(pte, threads, iterations):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "bench.json")
        subprocess.run([ember.cli_path(), "bench", pte, "--threads", str(threads), "--iterations", str(iterations),
                        "--json", report], capture_output=True, text=True, check=True)
        with open(report) as f:
            return json.load(f)["latency_ms"]["median"]


def python_median(pte, threads, iterations):
    m = ember.Module(pte, threads=threads)
    inputs = [np.zeros(i["shape"], i["dtype"]) for i in m.method_meta()["inputs"]]
    for _ in range(5):
        m.forward(inputs)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        m.forward(inputs)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("programs", nargs="+")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--iterations", type=int, default=200)
    args = p.parse_args()
    print(f"| program | threads | ember bench median (ms) | Module.forward median (ms) | difference (us) | ratio |")
    print("|---|---|---|---|---|---|")
    for pte in args.programs:
        cli = bench_median(pte, args.threads, args.iterations)
        py = python_median(pte, args.threads, args.iterations)
        print(f"| {pte.split('/')[-1]} | {args.threads} | {cli:.4f} | {py:.4f} | {(py - cli) * 1e3:.0f} | {py / max(cli, 1e-6):.2f} |")


if __name__ == "__main__":
    main()
