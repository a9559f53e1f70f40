#!/usr/bin/env python3
"""Writes the PyTorch (float64) references of the linear-algebra kernel tests into
test/kernels/portable/linalg_decomp/data/ (small .npy files, checked in).

Each case NAME is NAME.in<i>.npy (inputs, float64) and NAME.out<i>.npy (PyTorch's results,
float64 on CPU). The cases include ill-conditioned (Hilbert) and larger-norm matrices, where a
float32 or an unscaled algorithm visibly loses digits. Deterministic (seeded); rerun after
changing a case:

    python3 tools/kernels/gen_linalg_refs.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import torch

torch.manual_seed(14)
D = torch.float64


def hilbert(n):
    i = torch.arange(n, dtype=D)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def rand(*shape):
    return torch.randn(*shape, dtype=D)


def spd(n):
    a = rand(n, n)
    return a @ a.T + n * torch.eye(n, dtype=D)


def sym(n):
    a = rand(n, n)
    return a + a.T


def cases():
    a6 = rand(6, 6)
    a6 = a6 / torch.linalg.matrix_norm(a6, 1)
    # matrix_exp: small, larger norm (scaling and squaring matters), a non-normal matrix.
    yield "matrix_exp_small", [0.1 * a6], lambda x: [torch.linalg.matrix_exp(x)]
    yield "matrix_exp_norm10", [10 * a6], lambda x: [torch.linalg.matrix_exp(x)]
    yield "matrix_exp_norm40", [40 * a6], lambda x: [torch.linalg.matrix_exp(x)]
    jordan = torch.diag(torch.full((5,), -2.0, dtype=D)) + torch.diag(torch.full((4,), 30.0, dtype=D), 1)
    yield "matrix_exp_nonnormal", [jordan], lambda x: [torch.linalg.matrix_exp(x)]
    # inverse / solve / det on well- and ill-conditioned matrices (batched).
    yield "inv_batch", [rand(2, 5, 5)], lambda x: [torch.linalg.inv(x)]
    yield "inv_hilbert7", [hilbert(7)], lambda x: [torch.linalg.inv(x)]
    yield "solve_hilbert6", [hilbert(6), rand(6, 2)], lambda a, b: [torch.linalg.solve(a, b)]
    yield "solve_right", [rand(2, 4, 4), rand(3, 4)], lambda a, b: [torch.linalg.solve(a, b, left=False)]
    yield "solve_vector", [rand(5, 5), rand(5)], lambda a, b: [torch.linalg.solve(a, b)]
    yield "solve_triangular", [rand(4, 4), rand(4, 3)], lambda a, b: [
        torch.linalg.solve_triangular(a, b, upper=True),
        torch.linalg.solve_triangular(a, b, upper=False, unitriangular=True)]
    yield "det_batch", [rand(3, 5, 5)], lambda x: [torch.linalg.det(x), *torch.linalg.slogdet(x)]
    # Cholesky of SPD matrices, including Hilbert(8) (condition number ~1.5e10).
    yield "cholesky_spd", [spd(6)], lambda x: [torch.linalg.cholesky(x), torch.linalg.cholesky(x, upper=True)]
    yield "cholesky_hilbert8", [hilbert(8)], lambda x: [torch.linalg.cholesky(x)]
    # LU with partial pivoting (rectangular).
    yield "lu_wide", [rand(4, 6)], lambda x: list(torch.linalg.lu(x))
    # Symmetric eigenproblems: random, Hilbert (eigenvalues from 1.7 down to ~1e-10).
    yield "eigh_sym", [sym(6)], lambda x: list(torch.linalg.eigh(x))
    yield "eigh_hilbert8", [hilbert(8)], lambda x: list(torch.linalg.eigh(x))
    # UPLO='U' on a non-symmetric input: only the upper triangle is read (and reduced).
    yield "eigh_upper", [rand(6, 6)], lambda x: list(torch.linalg.eigh(x, UPLO="U"))
    # float32 eigh: PyTorch's ssyevd signs (the input is float32-representable; the kernel test
    # runs it as float32 and compares with these float32 results, upcast).
    s32 = sym(6).to(torch.float32)
    yield "eigh_float32", [s32.to(D)], lambda x: [t.to(D) for t in torch.linalg.eigh(x.to(torch.float32))]
    # householder_product of a geqrf factorisation.
    g, tau = torch.geqrf(rand(6, 4))
    yield "householder_product", [g, tau], lambda a, t: [torch.linalg.householder_product(a, t)]
    # pinv of a rank-deficient symmetric matrix, hermitian path and SVD path.
    v = rand(5, 3)
    low_rank = v @ torch.diag(torch.tensor([3.0, -2.0, 0.5], dtype=D)) @ v.T
    yield "pinv_hermitian", [low_rank], lambda x: [torch.linalg.pinv(x, hermitian=True), torch.linalg.pinv(x)]
    yield "matrix_power", [rand(4, 4) * 0.5], lambda x: [torch.linalg.matrix_power(x, 5),
                                                          torch.linalg.matrix_power(x, -3)]
    yield "spectral", [low_rank], lambda x: [torch.linalg.svdvals(x),
                                             torch.linalg.matrix_rank(x).to(D),
                                             torch.linalg.matrix_rank(x, hermitian=True).to(D)]
    # LDL^T with Bunch-Kaufman pivoting: a symmetric indefinite matrix, and one with a zero
    # diagonal (forces 2x2 pivots); LD, pivots (as float64) and the solve.
    def ldl(a, b):
        ld, piv = torch.linalg.ldl_factor(a)
        return [ld, piv.to(D), torch.linalg.ldl_solve(ld, piv, b)]
    yield "ldl_sym", [sym(6), rand(6, 2)], ldl
    zero_diag = sym(5)
    zero_diag.fill_diagonal_(0.0)
    yield "ldl_zero_diag", [zero_diag, rand(5, 3)], ldl
    # Principal square root of an SPD matrix (Hilbert(6): eigenvalues down to ~1e-8), polar
    # decomposition of a tall matrix.
    yield "matrix_sqrth", [hilbert(6)], lambda x: [torch.linalg.matrix_sqrth(x)]
    yield "polar", [rand(5, 3)], lambda x: list(torch.linalg.polar(x))
    yield "cond", [rand(5, 5)], lambda x: [torch.linalg.cond(x), torch.linalg.cond(x, 1),
                                           torch.linalg.cond(x, float("-inf"))]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "kernels", "portable", "linalg_decomp", "data")
    os.makedirs(out, exist_ok=True)
    for name, inputs, fn in cases():
        outputs = fn(*inputs)
        for i, t in enumerate(inputs):
            np.save(os.path.join(out, f"{name}.in{i}.npy"), np.require(t.numpy(), requirements="C"))
        for i, t in enumerate(outputs):
            np.save(os.path.join(out, f"{name}.out{i}.npy"), np.require(t.to(D).numpy(), requirements="C"))
    print("wrote", out)


if __name__ == "__main__":
    main()
