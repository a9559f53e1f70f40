#!/usr/bin/env python3
"""Writes the overload test cases under test/models/overloads/ (checked in; the test never runs
Python): one small module per ATen overload that PyTorch's complete schema table exposed
(reductions with .dim, scatter reduce variants, split variants, _nd losses, 1-D pooling,
Tensor-argument factories, index_fill variants, median/nanmedian, var_mean/std_mean, sorting,
searching), each torch.export'ed and saved with its seeded input and eager output.

For each case NAME: OUT/NAME/model.pt2, input_0.npy, output_0.npy.
//test/models:overload_cases_test exports every directory with the portable kernels, runs it
and compares with the eager output.

Usage: export_overload_cases.py [OUT [NAME ...]]   (default: test/models/overloads in this repo;
NAMEs: only those cases, so that adding one does not rewrite the others)"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 3, 8)
idx = torch.tensor([[0, 1, 2, 0, 1, 2, 0, 1]] * 3).unsqueeze(0).expand(2, 3, 8).contiguous()
cases = {
 'scatter_reduce_two': (lambda x: torch.scatter_reduce(x, 2, idx, x, reduce='amax'), (x,)),
 'scatter_value_reduce': (lambda x: torch.scatter(x, 2, idx, 2.0, reduce='multiply'), (x,)),
 'scatter_reduce_src': (lambda x: torch.scatter(x, 2, idx, x, reduce='add'), (x,)),
 'split_sizes': (lambda x: torch.split(x, [3, 5], dim=2)[1] * 2, (x,)),
 'split_with_sizes': (lambda x: x.split_with_sizes([3, 5], dim=2)[0] + 1, (x,)),
 'tensor_split_indices': (lambda x: torch.tensor_split(x, [2, 5], dim=2)[1] + 1, (x,)),
 'nll_loss_nd': (lambda x: F.nll_loss(F.log_softmax(x, 1), torch.zeros(2, 8, dtype=torch.long)), (x,)),
 'cross_entropy_nd': (lambda x: F.cross_entropy(x, torch.ones(2, 8, dtype=torch.long)), (x,)),
 'max_pool1d': (lambda x: F.max_pool1d(x, 2), (x,)),
 'avg_pool1d': (lambda x: F.avg_pool1d(x, 3, stride=2, padding=1), (x,)),
 'adaptive_avg_pool1d': (lambda x: F.adaptive_avg_pool1d(x, 3), (x,)),
 'adaptive_max_pool1d': (lambda x: F.adaptive_max_pool1d(x, 4), (x,)),
 'lp_pool1d': (lambda x: F.lp_pool1d(x.abs(), 2, 2), (x,)),
 'linspace_tensor': (lambda x: x + torch.linspace(x[0,0,0].detach(), 1.0, 8), (x,)),
 'index_fill_tensor': (lambda x: x.index_fill(2, torch.tensor([1, 3]), torch.tensor(5.0)), (x,)),
 'index_fill_scalar': (lambda x: x.index_fill(1, torch.tensor([0, 2]), -1.0), (x,)),
 'median_all': (lambda x: x.median(), (x,)),
 'median_dim': (lambda x: x.median(dim=2).values, (x,)),
 'nanmedian_all': (lambda x: x.nanmedian(), (x,)),
 'nanmedian_dim': (lambda x: x.nanmedian(dim=1).values, (x,)),
 'var_mean': (lambda x: torch.var_mean(x, dim=2)[0] + torch.var_mean(x, dim=2)[1], (x,)),
 'std_mean': (lambda x: torch.std_mean(x, dim=1, correction=0)[0], (x,)),
 'histc': (lambda x: torch.histc(x, bins=5, min=-2, max=2), (x,)),
 'logspace_tensor': (lambda x: x + torch.logspace(x[0,0,0].detach().clamp(0,1), 1.0, 8), (x,)),
 'amax_amin': (lambda x: x.amax(dim=(1,2)) - x.amin(dim=1).sum(), (x,)),
 'cumsum_cumprod': (lambda x: x.cumsum(2) + x.cumprod(1), (x,)),
 'logcumsumexp': (lambda x: torch.logcumsumexp(x, 2), (x,)),
 'masked_scatter': (lambda x: x.masked_scatter(x > 0, torch.ones(48)), (x,)),
 'take_along_dim': (lambda x: torch.take_along_dim(x, idx, dim=2), (x,)),
 'renorm': (lambda x: torch.renorm(x, 2, 0, 1.0), (x,)),
 'count_nonzero': (lambda x: torch.count_nonzero(x > 0, dim=2).float(), (x,)),
 'diff': (lambda x: torch.diff(x, dim=2), (x,)),
 'trapz': (lambda x: torch.trapezoid(x, dim=2), (x,)),
 'bucketize': (lambda x: torch.bucketize(x, torch.tensor([-1.0, 0.0, 1.0])).float(), (x,)),
 'searchsorted': (lambda x: torch.searchsorted(torch.tensor([-1.0, 0.0, 1.0]), x).float(), (x,)),
 'nan_to_num': (lambda x: torch.nan_to_num(x / (x > 0).float()), (x,)),
 'aminmax': (lambda x: torch.aminmax(x, dim=2)[0], (x,)),
 'mode': (lambda x: torch.mode(x.round(), dim=2).values, (x,)),
 'kthvalue': (lambda x: torch.kthvalue(x, 3, dim=2).values, (x,)),
 'topk': (lambda x: torch.topk(x, 3, dim=2).values, (x,)),
 'sort_stable': (lambda x: torch.sort(x, dim=2, stable=True).values, (x,)),
 # From the generated OpInfo set (tools/conformance/generate_opinfo_cases.py): no kernel,
 # decomposed to index_select with constant indices.
 'combinations': (lambda x: torch.combinations(x[0, 0, :5], r=3), (x,)),
 'combinations_with_replacement': (lambda x: torch.combinations(x[1, 2, 2:6], r=2, with_replacement=True), (x,)),
 # cross_entropy_loss: class-probability targets (with label smoothing), unbatched input.
 'cross_entropy_probs': (lambda x: F.cross_entropy(x, F.softmax(x.flip(1), 1)), (x,)),
 'cross_entropy_probs_smoothing': (lambda x: F.cross_entropy(x, F.softmax(x.flip(2), 1), reduction='none', label_smoothing=0.2), (x,)),
 'cross_entropy_unbatched': (lambda x: F.cross_entropy(x[0, :, 0], torch.tensor(2), reduction='none')
                             + F.cross_entropy(x[1, :, 1], torch.tensor(1)), (x,)),
 # take_along_dim broadcasting self and indices outside dim (both ways), negative indices.
 'take_along_dim_broadcast': (lambda x: torch.take_along_dim(x, torch.tensor([[[0, -1, 3]]]), dim=2)
                              + torch.take_along_dim(x[:, :1, :], torch.tensor([[[1], [2], [-2]]]), dim=2), (x,)),
 # histogram with explicit (uneven) edges: counts, weights + density, the last edge inclusive.
 'histogram_edges': (lambda x: torch.histogram(x.round(decimals=1), torch.tensor([-1.0, -0.5, 0.0, 1.0, 1.5])).hist
                     + torch.histogram(x, torch.tensor([-1.0, -0.5, 0.0, 1.0, 1.5]), weight=x.abs(), density=True).hist, (x,)),
 # _scaled_dot_product_flash_attention_for_cpu (output, logsumexp): causal, and with a scale.
 'sdpa_flash_cpu': (lambda x: sum(o + l.unsqueeze(-1) for o, l in [
     torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(x.unsqueeze(0), x.flip(2).unsqueeze(0), 2 * x.unsqueeze(0), 0.0, True),
     torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(x.unsqueeze(0), x.unsqueeze(0), x.unsqueeze(0).cos(), scale=0.3)]), (x,)),
 # histogramdd with edge tensors: counts + edges, and weights + density (uneven bin volumes).
 'histogramdd_edges': (lambda x: torch.histogramdd(x.view(-1, 2), [torch.tensor([-2.0, -0.5, 0.0, 2.0]), torch.tensor([-1.0, 0.0, 1.5])]).hist.sum()
                       + torch.histogramdd(x.view(-1, 3), [torch.tensor([-2.0, 0.0, 2.0]), torch.tensor([-1.0, 0.5, 1.0]), torch.tensor([-3.0, 3.0])],
                                           weight=x.view(-1, 3)[:, 0].abs(), density=True).hist * 100
                       + torch.histogramdd(x.view(-1, 2), [torch.tensor([-2.0, -0.5, 0.0, 2.0]), torch.tensor([-1.0, 0.0, 1.5])]).bin_edges[0].sum(), (x,)),
 # median/nanmedian.dim over lines with NaN (nanmedian skips them, median gives NaN).
 'median_dim_nan': (lambda x: torch.nanmedian(torch.where(x > 0.8, float('nan'), x), dim=2).values
                    + torch.nan_to_num(torch.median(torch.where(x > 1.5, float('nan'), x), dim=1).values, nan=100.0).sum(), (x,)),
 # subtract/multiply/divide: aliases the training IR keeps.
 'alias_ops': (lambda x: torch.subtract(x, x.flip(2), alpha=2) + torch.multiply(x, 3) + torch.divide(x, 1.5)
               + torch.divide(x, 0.7, rounding_mode='floor'), (x,)),
 # Composite ops decomposed by the exporter: fftshift/ifftshift (roll), linalg_diagonal,
 # linalg_vecdot; special_polygamma (polygamma's alias).
 'fftshift': (lambda x: torch.fft.fftshift(x) + torch.fft.ifftshift(x, dim=(1, 2)) * 2 + torch.fft.fftshift(x, dim=-1) * 3, (x,)),
 'linalg_diagonal_vecdot': (lambda x: torch.linalg.diagonal(x, offset=1, dim1=1, dim2=2)
                            + torch.linalg.vecdot(x, x.flip(1), dim=1)[:, :3], (x,)),
 'special_polygamma': (lambda x: torch.special.polygamma(1, x.abs() + 0.5), (x,)),
 'special_xlog1py': (lambda x: torch.special.xlog1py(torch.where(x > 0.5, 0.0, x), x.abs()) + torch.special.xlog1py(x, torch.where(x > 1, float('nan'), x.abs())).nan_to_num(nan=7.0), (x,)),
 # quantile/nanquantile kernels (.scalar and .default with a 1-d q; every interpolation).
 'quantile_q_tensor': (lambda x: torch.quantile(x, torch.tensor([0.1, 0.5, 0.9]), dim=2, keepdim=True), (x,)),
 'quantile_modes': (lambda x: torch.quantile(x, 0.3, dim=1, interpolation='nearest')
                    + torch.quantile(x, 0.7, interpolation='midpoint')
                    + torch.quantile(x, 0.45, dim=2, interpolation='lower').sum()
                    + torch.quantile(x, 0.45, dim=2, interpolation='higher').sum(), (x,)),
 'nanquantile': (lambda x: torch.nanquantile(torch.where(x > 0.8, float('nan'), x), 0.4, dim=2)
                 + torch.nanquantile(torch.where(x > 0.8, float('nan'), x), torch.tensor([0.25, 0.75])).sum(), (x,)),
}

class Case(torch.nn.Module):
    def __init__(self, f):
        super().__init__()
        self.f = f

    def forward(self, *args):
        return self.f(*args)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "test", "models", "overloads")
    only = set(sys.argv[2:])
    for name, (f, args) in cases.items():
        if only and name not in only:
            continue
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        m = Case(f).eval()
        ep = torch.export.export(m, args)
        torch.export.save(ep, os.path.join(d, "model.pt2"))
        for i, a in enumerate(args):
            np.save(os.path.join(d, f"input_{i}.npy"), a.numpy())
        np.save(os.path.join(d, "output_0.npy"), m(*args).detach().numpy())
        print("wrote", d)


if __name__ == "__main__":
    main()
