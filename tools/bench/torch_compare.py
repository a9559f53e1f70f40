#!/usr/bin/env python3
"""Times the same models in PyTorch eager and onnxruntime on this CPU, for side-by-side
comparison with `ember bench` (device_compare.sh). For each MODELS/<name>/model.pt2 and
thread count: median/min latency of forward over 30 calls after 5 warm-ups, written as
OUT/<name>.torch.t<N>.json and OUT/<name>.ort.t<N>.json (same field names as ember bench's
latency_ms), and PyTorch eager on CUDA where a GPU is present. The ONNX model is
MODELS/<name>/model.onnx when present, else torch.onnx.export of the loaded ExportedProgram.

Usage: torch_compare.py MODELS OUT [THREADS...]"""
import glob
import json
import os
import statistics
import sys
import time

import numpy as np
import torch


def timed(fn, warmup=5, iterations=30):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"min": min(times), "median": statistics.median(times), "mean": statistics.mean(times)}


def rel_l2(out, ref):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def write(path, engine, threads, lat, err):
    with open(path, "w") as f:
        json.dump({"engine": engine, "threads": threads, "latency_ms": lat, "rel_l2": err}, f)


def main():
    models, out = sys.argv[1], sys.argv[2]
    threads = [int(t) for t in sys.argv[3:]] or [1, 2]
    for mdir in sorted(glob.glob(os.path.join(models, "*"))):
        name = os.path.basename(mdir)
        inputs = [np.load(p) for p in sorted(glob.glob(os.path.join(mdir, "input_*.npy")))]
        ref = np.load(os.path.join(mdir, "output_0.npy"))
        ep = torch.export.load(os.path.join(mdir, "model.pt2"))
        module = ep.module()
        args = tuple(torch.from_numpy(a) for a in inputs)

        def first(o):
            while isinstance(o, (tuple, list)):
                o = o[0]
            return o.detach().numpy() if hasattr(o, "detach") else getattr(o, "logits", o)

        with torch.inference_mode():
            err = rel_l2(first(module(*args)), ref)
            for t in threads:
                torch.set_num_threads(t)
                lat = timed(lambda: module(*args))
                write(os.path.join(out, f"{name}.torch.t{t}.json"), "torch", t, lat, err)
                print(f"{name} torch t{t}: median {lat['median']:.2f} ms (rel L2 {err:.1e})")
            if torch.cuda.is_available():
                try:  # the GPU reference; inputs go up and outputs come back each call, as in Ember
                    gpu = ep.module().to("cuda")

                    def call():
                        o = gpu(*(a.to("cuda") for a in args))
                        return torch.utils._pytree.tree_map(lambda t: t.cpu(), o)

                    gerr = rel_l2(first(call()), ref)
                    lat = timed(call)
                    write(os.path.join(out, f"{name}.torch_cuda.t1.json"), "torch_cuda", 1, lat, gerr)
                    print(f"{name} torch cuda: median {lat['median']:.2f} ms (rel L2 {gerr:.1e})")
                except Exception as e:
                    print(f"{name} torch cuda: skipped ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
        try:
            import onnxruntime as ort

            onnx_path = os.path.join(mdir, "model.onnx")  # written by export_torchvision.py
            if not os.path.exists(onnx_path):
                onnx_path = os.path.join("/tmp", name + ".onnx")
                torch.onnx.export(ep, args, onnx_path, dynamo=True)
            for t in threads:
                so = ort.SessionOptions()
                so.intra_op_num_threads = t
                so.inter_op_num_threads = 1
                sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
                feed = {i.name: a for i, a in zip(sess.get_inputs(), inputs)}
                err = rel_l2(sess.run(None, feed)[0], ref)
                lat = timed(lambda: sess.run(None, feed))
                write(os.path.join(out, f"{name}.ort.t{t}.json"), "onnxruntime", t, lat, err)
                print(f"{name} onnxruntime t{t}: median {lat['median']:.2f} ms (rel L2 {err:.1e})")
        except Exception as e:  # an exporter gap must not hide the other figures
            print(f"{name} onnxruntime: skipped ({type(e).__name__}: {str(e).splitlines()[0][:200]})")


if __name__ == "__main__":
    main()
