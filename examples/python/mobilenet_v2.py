"""From a torchvision model to a timed, checked .pte on XNNPACK, in Python (a notebook's cells,
one after another). Needs `pip install ember-runtime` (docs/python.md), torch and torchvision.

    python3 examples/python/mobilenet_v2.py [--out DIR] [--threads N] [--int8]

Weights: torchvision's pretrained ones need a download, so the model keeps its seeded random
initialisation. That alone makes activations shrink layer after layer (to 1e-8 at the end), which
no int8 scale represents; a few training-mode passes on random batches give the batch norms
real statistics first, so activations have the ranges of a trained network. That checks the
numbers just as well (not the predictions).
"""
import argparse
import os

import torch
import torchvision

import ember

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--out", default=".", help="directory for the .pte files")
parser.add_argument("--threads", type=int, default=4)
parser.add_argument("--int8", action="store_true", help="also export an int8 program (calibrated)")
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

# 1. The model and an input, as PyTorch runs them.
torch.manual_seed(0)
model = torchvision.models.mobilenet_v2()
model.train()
with torch.no_grad():
    for _ in range(4):
        model(torch.randn(16, 3, 224, 224))  # batch-norm running statistics only; no weights change
model.eval()
x = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    want = model(x)

# 2. torch.export, then Ember's exporter: XNNPACK for everything it takes, PyTorch's output
#    bundled into the program as a test case.
exported = torch.export.export(model, (x,))
pte = os.path.join(args.out, "mobilenet_v2_xnnpack.pte")
summary = ember.export(exported, pte, backend="xnnpack", bundle=[((x,), (want,))])
print(summary.strip().splitlines()[0])

# 3. Load it and look at it: methods, inputs, outputs, delegates, memory.
m = ember.Module(pte, threads=args.threads)
print(m)

# 4. Run it on the torch tensor (torch in, torch out) and compare with PyTorch.
(got,) = m.forward(x)
rel_l2 = float(torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want))
print(f"relative L2 error vs PyTorch: {rel_l2:.2e}")
assert rel_l2 < 1e-4, rel_l2

# 5. The bundled case, checked by the runtime with the default fp32 tolerances.
report = m.verify()
print(report, report.cases[0])
assert report.passed

# 6. Time it, every operator inside the delegate too.
profile = m.profile(x, iterations=20)
print(f"median {profile.median_ms:.2f} ms over {len(profile.latency_ms)} runs at {args.threads} threads")
print("\n".join(profile.report.splitlines()[:12]))

# 7. Optionally int8: calibrated on a few inputs (here the input and noisy copies of it).
if args.int8:
    samples = [x] + [x + 0.1 * torch.randn_like(x) for _ in range(7)]
    pte8 = os.path.join(args.out, "mobilenet_v2_int8.pte")
    ember.export(exported, pte8, backend="xnnpack", quantize="int8", calibrate=samples)
    m8 = ember.Module(pte8, threads=args.threads)
    (got8,) = m8.forward(x)
    err8 = float(torch.linalg.vector_norm(got8 - want) / torch.linalg.vector_norm(want))
    print(f"int8: relative L2 {err8:.3f} vs float; median {m8.profile(x).median_ms:.2f} ms")
    assert err8 < 0.25, err8
print("OK")
