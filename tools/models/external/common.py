"""The registry of external models and the helpers their builders share."""
import torch
import torch.nn as nn

MODELS = {}  # name -> (source, arch, builder)


def model(name, source, arch):
    def register(fn):
        MODELS[name] = (source, arch, fn)
        return fn
    return register


class Outputs(nn.Module):
    """Calls a Hugging Face model with named tensor arguments and returns a tuple of tensors
    (the fields named in `keys`), so the exported graph has plain tensor outputs."""

    def __init__(self, m, arg_names, keys, **fixed):
        super().__init__()
        self.m, self.arg_names, self.keys, self.fixed = m, arg_names, keys, fixed

    def forward(self, *args):
        out = self.m(**dict(zip(self.arg_names, args)), **self.fixed)
        return tuple(out[k] for k in self.keys)


def randomize_norms(m, x):
    """Untrained CNNs collapse (BatchNorm with unit statistics after small-variance init makes
    the output barely depend on the input). Random affine parameters and running statistics
    measured on random batches like `x` keep the reference check sensitive to the input path."""
    g = torch.Generator().manual_seed(1)
    bns = [mod for mod in m.modules() if isinstance(mod, nn.modules.batchnorm._BatchNorm)]
    for bn in bns:
        with torch.no_grad():
            if bn.affine:
                bn.weight.copy_(0.5 + torch.rand(bn.num_features, generator=g))
                bn.bias.copy_(0.2 * torch.randn(bn.num_features, generator=g))
        bn.reset_running_stats()
        bn.momentum = None  # cumulative average over the calibration batches
    m.train()
    with torch.no_grad():
        for k in range(2):
            m(torch.randn((4,) + tuple(x.shape[1:]), generator=torch.Generator().manual_seed(100 + k)))
    return m.eval()


def ids(n, vocab=256, batch=1, seed=0):
    return torch.randint(3, vocab, (batch, n), generator=torch.Generator().manual_seed(seed))


def image(h=64, w=None, c=3, seed=0):
    return torch.randn(1, c, h, w or h, generator=torch.Generator().manual_seed(seed))


def hf(cls_name, cfg_name, **cfg):
    import transformers
    config = getattr(transformers, cfg_name)(**cfg)
    return getattr(transformers, cls_name)(config)


