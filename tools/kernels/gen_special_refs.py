#!/usr/bin/env python3
"""Writes the PyTorch (float64) references of the special-function kernel tests into
test/kernels/portable/special/data/: for each function a grid of (x, n) (or (x, q), or x)
values covering the special cases ATen's implementations branch on (n < 0, n = 0 / 1,
|x| = 1, shifted x = 0 / 1, the trigonometric form for large n inside (-1, 1), the
recurrence outside), as NAME.x.npy, NAME.n.npy and NAME.out.npy. Deterministic; rerun after
changing a grid (Airy Ai's reference is mpmath's, see below):

    python3 tools/kernels/gen_special_refs.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import torch

D = torch.float64
POLYS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "kernels", "portable", "special", "data")
    os.makedirs(out, exist_ok=True)
    xs = torch.tensor([-2.5, -1.0, -0.9, -0.5, 0.0, 0.25, 0.5, 0.75, 0.9, 1.0, 1.5, 3.0], dtype=D)
    ns = torch.tensor([-3.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.7, 5.0, 7.0, 9.0, 12.0, 20.0], dtype=D)
    x, n = torch.meshgrid(xs, ns, indexing="ij")
    x, n = x.contiguous(), n.contiguous()

    def save(name, **arrays):
        for key, t in arrays.items():
            np.save(os.path.join(out, f"{name}.{key}.npy"), np.require(t.numpy(), requirements="C"))

    for p in POLYS:
        save(p, x=x, n=n, out=getattr(torch.special, p)(x, n))
    # Hurwitz zeta: s > 1 over q > 0, q < 0 (integer s), s == 1, s < 1, q a non-positive integer.
    s = torch.tensor([1.0, 1.5, 2.0, 3.0, 4.5, 10.0, 0.5, 2.0, 3.0], dtype=D)
    q = torch.tensor([2.0, 0.5, 1.0, 7.25, 30.0, 1.5, 2.0, -1.5, 0.0], dtype=D)
    save("zeta", x=s, n=q, out=torch.special.zeta(s, q))
    # Airy Ai on both sides: oscillatory (x < 0), decaying (x > 0), across the series /
    # asymptotic boundaries at -10 and 5.
    ax = torch.tensor([-30.0, -12.5, -10.5, -10.0, -8.48, -5.0, -2.3381, -1.0, 0.0, 0.7, 2.0, 4.9, 5.1, 8.0, 20.0],
                      dtype=D)
    # The reference is mpmath's Ai (50 digits): PyTorch's own float64 Ai is off by up to ~7e-7
    # near its zeros (e.g. x = -2.3381), far more than a double computation needs to be.
    import mpmath
    mpmath.mp.dps = 50
    ref = torch.tensor([float(mpmath.airyai(mpmath.mpf(float(v)))) for v in ax], dtype=D)
    assert torch.allclose(ref, torch.special.airy_ai(ax), rtol=1e-4, atol=1e-6)
    save("airy_ai", x=ax, out=ref)
    print("wrote", out)


if __name__ == "__main__":
    main()
