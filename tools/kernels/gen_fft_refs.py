#!/usr/bin/env python3
"""Writes the PyTorch (float64) references of the real-output FFT kernel tests (irfft*,
hfft*) into test/kernels/portable/fft/data/: one real input x.npy [3, 4, 5] and, per case
NAME (listed in CASES: op, n/s, dim, norm), NAME.npy. Deterministic; rerun after changing a case:

    python3 tools/kernels/gen_fft_refs.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import torch

# name -> (torch.fft function, n or s, dim, norm). The test reads the same table.
CASES = {
    "irfft_default": ("irfft", None, -1, None),
    "irfft_n7_dim1": ("irfft", 7, 1, "ortho"),
    "irfft_n2_forward": ("irfft", 2, 0, "forward"),
    "irfft2_s36": ("irfft2", [3, 6], [1, 2], None),
    "irfftn_all": ("irfftn", None, None, "backward"),
    "irfftn_s_crop": ("irfftn", [2, 3, 4], None, "ortho"),
    "hfft_default": ("hfft", None, -1, None),
    "hfft_n9_forward": ("hfft", 9, 2, "forward"),
    "hfft2_default": ("hfft2", None, [-2, -1], None),
    "hfftn_ortho": ("hfftn", [5, 8], [0, 2], "ortho"),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "kernels", "portable", "fft", "data")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(3)
    x = torch.randn(3, 4, 5, dtype=torch.float64)
    np.save(os.path.join(out, "x.npy"), x.numpy())
    for name, (fn, size, dim, norm) in CASES.items():
        f = getattr(torch.fft, fn)
        kwargs = {"norm": norm}
        if fn in ("irfft", "hfft"):
            y = f(x, n=size, dim=dim, **kwargs)
        else:
            y = f(x, s=size, dim=dim, **kwargs) if dim is not None else f(x, s=size, **kwargs)
        np.save(os.path.join(out, f"{name}.npy"), np.require(y.numpy(), requirements="C"))
    print("wrote", out)


if __name__ == "__main__":
    main()
