#!/usr/bin/env python3
"""Conformance cases for Ember's quantized operators, made by PyTorch's PT2E flow (PyPI torch +
torchao; not run in CI: its output is checked in under test/quant/opcases).

Each case is a small float module quantized with torchao's XNNPACK quantizer (prepare_pt2e,
calibration on seeded random inputs, convert_pt2e): static int8 (per-channel symmetric weights,
per-tensor asymmetric activations) or dynamic (activations quantized per call). PyTorch's
converted program is the reference: its outputs on a seeded input are PyTorch's own quantized
reference arithmetic (quantize / dequantize ops around float ops). Layout as ../shared/opcases:
  OUT/<name>/model.pt2     torch.export of the converted module (training IR)
  OUT/<name>/core.pt2      the same after run_decompositions() (core ATen IR)
  OUT/<name>/input_<i>.npy, output_0.npy, case.json ("op", "variant", "ops", "output_scale":
                           the quantization step of the output where the module ends on a
                           quantized value, for comparisons within one step)

  python3 tools/conformance/generate_quantized_cases.py test/quant/opcases
"""
import json
import os
import shutil
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Conv(nn.Module):
    def __init__(self, cin=4, cout=6, k=3, stride=1, padding=1, groups=1, act=None, bias=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups, bias=bias)
        self.act = act

    def forward(self, x):
        y = self.conv(x)
        if self.act == "relu":
            y = F.relu(y)
        elif self.act == "relu6":
            y = F.hardtanh(y, 0.0, 6.0)
        return y


class Linear(nn.Module):
    def __init__(self, k=24, n=10, act=None, bias=True):
        super().__init__()
        self.fc = nn.Linear(k, n, bias=bias)
        self.act = act

    def forward(self, x):
        y = self.fc(x)
        return F.relu(y) if self.act == "relu" else y


class ConvThen(nn.Module):
    """A conv (so the op after it reads a quantized activation), then `op`."""

    def __init__(self, op):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.op = op

    def forward(self, x):
        y = self.conv(x)
        if self.op == "max_pool2d":
            return F.max_pool2d(y, 2)
        if self.op == "avg_pool2d":
            return F.avg_pool2d(y, 2)
        if self.op == "adaptive_avg_pool2d":
            return F.adaptive_avg_pool2d(y, 1)
        if self.op == "mean":
            return y.mean(dim=(2, 3), keepdim=True)
        raise ValueError(self.op)


class Binary(nn.Module):
    """Two convs, then add / add + relu / mul / cat of their outputs."""

    def __init__(self, op):
        super().__init__()
        self.a = nn.Conv2d(4, 6, 1)
        self.b = nn.Conv2d(4, 6, 3, padding=1)
        self.op = op

    def forward(self, x):
        p, q = self.a(x), self.b(x)
        if self.op == "add":
            return p + q
        if self.op == "add_relu":
            return F.relu(p + q)
        if self.op == "mul":
            return p * q
        if self.op == "cat":
            return torch.cat([p, q], dim=1)
        raise ValueError(self.op)


IMG = (1, 4, 9, 9)
CASES = [
    # name, module, input shapes, dynamic
    ("conv2d", lambda: Conv(), [IMG], False),
    ("conv2d_relu", lambda: Conv(act="relu"), [IMG], False),
    ("conv2d_strided_relu6", lambda: Conv(k=3, stride=2, padding=2, act="relu6"), [IMG], False),
    ("conv2d_no_bias_5x5", lambda: Conv(k=5, padding=2, bias=False), [IMG], False),
    ("conv2d_depthwise", lambda: Conv(cin=4, cout=4, groups=4), [IMG], False),
    ("conv2d_depthwise_multiplier", lambda: Conv(cin=4, cout=8, groups=4, act="relu"), [IMG], False),
    ("conv2d_pointwise", lambda: Conv(k=1, padding=0), [IMG], False),
    ("linear", lambda: Linear(), [(3, 24)], False),
    ("linear_relu", lambda: Linear(act="relu"), [(5, 24)], False),
    ("linear_no_bias", lambda: Linear(bias=False), [(2, 24)], False),
    ("add", lambda: Binary("add"), [IMG], False),
    ("add_relu", lambda: Binary("add_relu"), [IMG], False),
    ("mul", lambda: Binary("mul"), [IMG], False),
    ("cat", lambda: Binary("cat"), [IMG], False),
    ("max_pool2d", lambda: ConvThen("max_pool2d"), [IMG], False),
    ("avg_pool2d", lambda: ConvThen("avg_pool2d"), [IMG], False),
    ("adaptive_avg_pool2d", lambda: ConvThen("adaptive_avg_pool2d"), [IMG], False),
    ("mean", lambda: ConvThen("mean"), [IMG], False),
    ("dynamic_linear", lambda: Linear(k=32, n=12), [(4, 32)], True),
    ("dynamic_linear_relu", lambda: Linear(k=64, n=16, act="relu"), [(1, 64)], True),
]


def ops_of(ep):
    return sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})


def output_scale(ep):
    """The scale of the dequantize producing the program's output, when it ends on one."""
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    if out.op == "call_function" and "dequantize_per_tensor" in str(out.target) and len(out.args) > 1:
        s = out.args[1]
        return float(s) if isinstance(s, (float, int)) else None
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.testing.pt2e._xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config

    out_root = sys.argv[1]
    for name, make, shapes, dynamic in CASES:
        torch.manual_seed(zlib.crc32(name.encode()) % 1000)
        model = make().eval()
        inputs = tuple(torch.randn(*s) for s in shapes)
        captured = torch.export.export(model, inputs).module()
        config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic)
        prepared = prepare_pt2e(captured, XNNPACKQuantizer().set_global(config))
        for _ in range(8):  # calibration on other seeded samples of the same distribution
            prepared(*tuple(torch.randn(*s) for s in shapes))
        converted = convert_pt2e(prepared)
        ep = torch.export.export(converted, inputs)
        core = ep.run_decompositions()
        with torch.no_grad():
            y = converted(*inputs)
        d = os.path.join(out_root, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        torch.export.save(ep, os.path.join(d, "model.pt2"))
        torch.export.save(core, os.path.join(d, "core.pt2"))
        for i, x in enumerate(inputs):
            np.save(os.path.join(d, f"input_{i}.npy"), x.numpy())
        np.save(os.path.join(d, "output_0.npy"), y.numpy())
        info = {"op": name, "variant": "dynamic" if dynamic else "static", "sample": 0, "dtype": "torch.float32",
                "ops": ops_of(ep), "core_aten_ops": ops_of(core), "input_shapes": [list(s) for s in shapes],
                "input_dtypes": ["torch.float32"] * len(shapes), "output_dtypes": ["torch.float32"],
                "nondeterministic": False, "output_scale": output_scale(ep), "torch": torch.__version__}
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(info, f, indent=1)
        q = [o for o in info["ops"] if "quantized_decomposed" in o]
        print(f"{name}: {len(q)} quantized_decomposed ops, output scale {info['output_scale']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
