#!/usr/bin/env python3
"""External-model suite: public architectures from transformers, torchvision and timm (and a
few plain torch.nn ones) in small configurations with seeded random weights, built from their
config classes (nothing is downloaded), exported with torch.export (training IR) and saved
the way ../shared/models holds models:

  OUT/<name>/model.pt2      torch.export.save of torch.export.export(model, inputs)
  OUT/<name>/input_<i>.npy  seeded inputs
  OUT/<name>/output_<i>.npy eager PyTorch float32 results on those inputs
  OUT/<name>/meta.json      arch, source library, parameter count, aten ops in the graph,
                            input shapes/dtypes, torch version, input_sensitivity

Usage: export_external.py [-o OUT] [--list] [NAME...]   (default OUT: /tmp/ember_external;
no NAME: every model). A model whose export fails in PyTorch is reported and skipped.
Regenerating docs/model-coverage.md: see tools/models/run_external.py.
"""
import argparse
import json
import os
import sys
import traceback

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from external import MODELS  # noqa: E402 (the model families, one module each under external/)


# ---------------------------------------------------------------- driver
def to_list(y):
    if isinstance(y, torch.Tensor):
        return [y]
    out = []
    for v in y:
        out.extend(to_list(v))
    return out


def op_list(ep):
    ops = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            name = str(n.target)
            ops[name] = ops.get(name, 0) + 1
    return dict(sorted(ops.items()))


def library_versions():
    """The model libraries' versions (a model's code, hence its graph, changes with them)."""
    import importlib
    out = {}
    for lib in ("transformers", "timm", "torchvision", "diffusers"):
        try:
            out[lib] = importlib.import_module(lib).__version__
        except ImportError:
            pass
    return out


def export_one(out_root, name):
    source, arch, build = MODELS[name]
    torch.manual_seed(0)
    m, inputs = build()
    m = m.eval()
    with torch.no_grad():
        ref = to_list(m(*inputs))
        # How much the output moves between two random inputs (a collapsed model is useless as a check).
        g = torch.Generator().manual_seed(7)
        other = tuple(torch.randn(a.shape, generator=g) if a.is_floating_point() else
                      torch.randint(3, int(a.max()) + 1, a.shape, generator=g) if a.max() > 1 else a for a in inputs)
        alt = to_list(m(*other))
        sens = max(float((a - b).norm() / max(b.norm(), 1e-12)) for a, b in zip(alt, ref) if b.is_floating_point())
    ep = torch.export.export(m, inputs)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    for i, a in enumerate(inputs):
        np.save(os.path.join(out, f"input_{i}.npy"), a.numpy())
    for i, r in enumerate(ref):
        np.save(os.path.join(out, f"output_{i}.npy"), r.detach().numpy())
    meta = {
        "name": name, "arch": arch, "source": source, "torch": torch.__version__, "libraries": library_versions(),
        "params": sum(p.numel() for p in m.parameters()),
        "inputs": [{"shape": list(a.shape), "dtype": str(a.dtype).replace("torch.", "")} for a in inputs],
        "outputs": [{"shape": list(r.shape), "dtype": str(r.dtype).replace("torch.", "")} for r in ref],
        "input_sensitivity": sens, "aten_ops": op_list(ep),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    size = os.path.getsize(os.path.join(out, "model.pt2"))
    print(f"{name}: {meta['params']} params, {size // 1024} KB, {sum(meta['aten_ops'].values())} ops, "
          f"input sensitivity {sens:.3g} -> {out}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--out", default="/tmp/ember_external")
    p.add_argument("--list", action="store_true")
    p.add_argument("names", nargs="*")
    a = p.parse_args()
    if a.list:
        for n, (src, arch, _) in MODELS.items():
            print(f"{n:18s} {src:13s} {arch}")
        return 0
    failed = []
    for n in a.names or list(MODELS):
        if n not in MODELS:
            sys.exit(f"unknown model {n}; --list shows them")
        try:
            export_one(a.out, n)
        except Exception as e:  # keep going: one architecture that PyTorch cannot export is not fatal
            traceback.print_exc()
            failed.append(n)
            print(f"{n}: torch export failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}", flush=True)
    if failed:
        print("failed in PyTorch:", " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
