#!/usr/bin/env python3
"""Times PyTorch on the GPU for side-by-side comparison with the Vulkan delegate's `ember bench`:
eager CUDA and torch.compile(mode="reduce-overhead") (Inductor + CUDA graphs), each call
uploading the inputs and reading the outputs back, as Ember's figures do. PyTorch's defaults
are kept (cuDNN convolutions may use TF32). For each MODELS/<name>/model.pt2 (+ input_*.npy,
output_0.npy): median / min ms over ITERATIONS calls after WARMUP (CUDA graph capture happens
in the warm-up), the relative L2 against the stored eager output, and the compile time.
Writes OUT.json ({name: {"eager": {...}, "compile": {...}}}) and prints a line per figure.
Usage: torch_compile_gpu.py MODELS OUT.json [NAME...]   (ITERATIONS, WARMUP: environment)"""
import glob
import json
import os
import statistics
import sys
import time

import numpy as np
import torch


def timed(fn, warmup, iterations):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median": statistics.median(times), "min": min(times)}


def first(o):
    while isinstance(o, (tuple, list)):
        o = o[0]
    return o


def rel_l2(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def main():
    models, out_path = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or sorted(os.listdir(models))
    iterations = int(os.environ.get("ITERATIONS", "50"))
    warmup = int(os.environ.get("WARMUP", "10"))
    results = {}
    for name in names:
        mdir = os.path.join(models, name)
        args = tuple(torch.from_numpy(np.load(p)) for p in sorted(glob.glob(os.path.join(mdir, "input_*.npy"))))
        ref = np.load(os.path.join(mdir, "output_0.npy"))
        module = torch.export.load(os.path.join(mdir, "model.pt2")).module().to("cuda")
        entry = {}
        with torch.inference_mode():
            for mode, fn in (("eager", module), ("compile", None)):
                t0 = time.perf_counter()
                if fn is None:
                    fn = torch.compile(module, mode="reduce-overhead")

                def call(fn=fn):
                    o = fn(*(a.to("cuda") for a in args))
                    return first(o).cpu()

                try:
                    err = rel_l2(call().numpy(), ref)
                    ready_s = time.perf_counter() - t0
                    lat = timed(call, warmup, iterations)
                except Exception as e:  # one model's compiler gap must not hide the others
                    print(f"{name} {mode}: failed ({type(e).__name__}: {str(e).splitlines()[0][:200]})", flush=True)
                    continue
                entry[mode] = dict(lat, rel_l2=err, first_call_s=ready_s)
                print(f"{name} torch {mode}: median {lat['median']:.3f} ms, min {lat['min']:.3f} "
                      f"(rel L2 {err:.1e}, first call {ready_s:.1f} s)", flush=True)
        results[name] = entry
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
