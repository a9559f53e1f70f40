#!/usr/bin/env python3
"""How far fp16 *storage* alone takes a model from its float32 reference, in PyTorch.

Runs a shared model's exported graph with every weight, buffer, input and intermediate
tensor rounded to float16 (all arithmetic still float32), which is what Ember's Vulkan
`--vulkan-fp16` does, and prints the relative L2 error against the float32 eager reference
(output_0.npy). This bounds what any fp16-storage backend can reach on that model; the
Vulkan fp16 test's per-model tolerances come from it.

Usage: python3 tools/models/fp16_storage_error.py ../shared/models/mobilenet_v2 [...]
"""
import glob
import sys

import numpy as np
import torch
import torch.fx as fx


def to_fp16_storage(v):
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.half().float()
    if isinstance(v, (tuple, list)):
        return type(v)(to_fp16_storage(x) for x in v)
    return v


class Fp16Storage(fx.Interpreter):
    def run_node(self, n):
        return to_fp16_storage(super().run_node(n))


def main():
    for d in sys.argv[1:]:
        gm = torch.export.load(f"{d}/model.pt2").module()
        with torch.no_grad():
            for t in list(gm.parameters()) + [b for b in gm.buffers() if b.is_floating_point()]:
                t.copy_(t.half().float())
            inputs = [torch.from_numpy(np.load(f)) for f in sorted(glob.glob(f"{d}/input_*.npy"))]
            y = Fp16Storage(gm).run(*to_fp16_storage(inputs))
        y = (y[0] if isinstance(y, (tuple, list)) else y).numpy()
        ref = np.load(f"{d}/output_0.npy")
        print(f"{d}: fp16-storage relative L2 {np.linalg.norm(y - ref) / np.linalg.norm(ref):.3g}")


if __name__ == "__main__":
    main()
