#!/usr/bin/env python3
"""Writes the per-op cases of the QNN delegate's differential test (test/delegates/qnn/qnn_ops_test.cc,
issue 28): one tiny PyTorch module per case, the op under test alone between quantize /
dequantize, or after a conv for the ops that keep their input's grid (cases() says why),
quantized with PT2E (torchao's prepare_pt2e / convert_pt2e with the XNNPACK quantizer:
per-tensor static int8 activations, per-channel symmetric int8 weights), calibrated on a few
seeded random inputs, exported with torch.export and saved as

  <out>/<case>.pt2          the PT2E int8 program (quantized_decomposed Q/DQ around float ops)
  <out>/<case>_input.npy    its seeded input, float32 (<case>_input1.npy: a binary op's second)

The XNNPACK quantizer annotates conv / linear / add / mul and lets
relu / hardtanh / max_pool2d / mean / permute / flatten / view share their input's parameters.
The other ops under test (sub, sigmoid, tanh, hardswish, softmax, avg / adaptive-avg pooling, mean,
cat (its inputs on one grid) and reshape (whose inputs are not quantized layers here), and relu /
hardtanh where they should stay separate ops rather than be fused into the conv before them) are
annotated here with the same configuration's activation spec (OpAnnotator, run before the XNNPACK
quantizer, whose annotators skip nodes already annotated).

Usage: python3 tools/models/make_qnn_op_cases.py [--out test/delegates/qnn/cases] [--only NAME,...]
PyPI's torch (2.11 used) and torchao (0.18 used); CPU is enough (seconds).
"""
import argparse
import os
import sys
import traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer import (ComposableQuantizer, QuantizationAnnotation, Quantizer,
                                                     SharedQuantizationSpec)
    from torchao.testing.pt2e._xnnpack_quantizer import (QuantizationConfig, XNNPACKQuantizer,
                                                         get_symmetric_quantization_config)
    from torchao.quantization.pt2e.quantizer import QuantizationSpec
    from torchao.quantization.pt2e.observer import MinMaxObserver
except ImportError:  # older stacks: PyTorch's own copy of PT2E
    from torch.ao.quantization.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torch.ao.quantization.quantizer import QuantizationAnnotation, Quantizer, SharedQuantizationSpec
    from torch.ao.quantization.quantizer.composable_quantizer import ComposableQuantizer
    from torch.ao.quantization.quantizer.xnnpack_quantizer import XNNPACKQuantizer, get_symmetric_quantization_config
    from torch.ao.quantization.quantizer.xnnpack_quantizer_utils import QuantizationConfig
    from torch.ao.quantization.quantizer import QuantizationSpec
    from torch.ao.quantization.observer import MinMaxObserver

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CONFIG = get_symmetric_quantization_config(is_per_channel=True)
ACT = CONFIG.input_activation
# a16w8: 16-bit activations (int16, per tensor, min-max calibrated), the same int8 weights.
ACT16 = QuantizationSpec(dtype=torch.int16, quant_min=-32768, quant_max=32767, qscheme=torch.per_tensor_affine,
                         is_dynamic=False, observer_or_fake_quant_ctr=MinMaxObserver)
CONFIG16 = QuantizationConfig(ACT16, ACT16, CONFIG.weight, CONFIG.bias)
# The cases also written in a16w8 form (<case>_a16w8.pt2, with <case>_a16w8_float.npy: the float
# model's output, since what a16w8 buys is closeness to it).
A16W8 = ["conv2d_3x3_pad1", "conv2d_depthwise", "conv2d_relu_fused", "linear", "add", "mul", "sigmoid", "tanh",
         "avg_pool2d_3x3_s2_p1", "mean", "softmax_2d", "layer_norm", "matmul_2d", "upsample_bilinear_x2"]

# Ops annotated here: their own output parameters (range differs from the input's) ...
OWN_OUTPUT = {"aten.sub.Tensor", "aten.sigmoid.default", "aten.tanh.default", "aten.hardswish.default",
              "aten.softmax.int", "aten._softmax.default", "aten.avg_pool2d.default", "aten.mean.dim",
              "aten.adaptive_avg_pool2d.default", "aten.div.Tensor", "aten.matmul.default", "aten.bmm.default",
              "aten.layer_norm.default"}
# ... or their input's (same grid).
SHARED_OUTPUT = {"aten.cat.default", "aten.reshape.default", "aten.view.default", "aten.relu.default",
                 "aten.hardtanh.default", "aten.relu6.default", "aten.pad.default", "aten.upsample_nearest2d.vec",
                 "aten.upsample_bilinear2d.vec"}


class OpAnnotator(Quantizer):
    """Annotates the ops under test that the XNNPACK quantizer leaves alone (or would fuse)."""

    def __init__(self, targets, act=ACT):
        super().__init__()
        self.targets = set(targets)
        self.act = act

    def annotate(self, model):
        for n in model.graph.nodes:
            name = str(n.target)
            if n.op != "call_function" or name not in self.targets:
                continue
            args = n.args[0] if name == "aten.cat.default" else n.args  # cat: a list of tensors
            tensors = [a for a in args if isinstance(a, torch.fx.Node)]
            if not tensors:
                continue
            first = tensors[0]
            if name in OWN_OUTPUT:
                qmap = {a: self.act for a in tensors}
                if name == "aten.layer_norm.default":  # weight and bias: 8-bit like other weights
                    qmap.update({a: ACT for a in tensors[1:]})
                out = self.act
            else:  # same grid as the (first) input
                qmap = {first: self.act}
                qmap.update({a: SharedQuantizationSpec((first, n)) for a in tensors[1:]})
                out = SharedQuantizationSpec((first, n))
            n.meta["quantization_annotation"] = QuantizationAnnotation(input_qspec_map=qmap, output_qspec=out,
                                                                       _annotated=True)
        return model

    def validate(self, model):
        pass


def conv(ci, co, k=3, **kw):
    return nn.Conv2d(ci, co, k, **kw)


class Chain(nn.Module):
    """pre -> fn -> post, any of them optional; `two` runs a second branch for binary ops."""

    def __init__(self, pre=None, fn=None, post=None, two=None):
        super().__init__()
        self.pre, self.post, self.two, self.fn = pre, post, two, fn

    def forward(self, x):
        y = self.pre(x) if self.pre is not None else x
        if self.two is not None:
            y = self.fn(y, self.two(x))
        elif self.fn is not None:
            y = self.fn(y)
        return self.post(y) if self.post is not None else y


def scaled(layer, factor):
    """`layer` with its weights and bias multiplied by `factor` (wider output range)."""
    with torch.no_grad():
        layer.weight.mul_(factor)
        layer.bias.mul_(factor)
    return layer


class Binary(nn.Module):
    """fn(x, y) on two inputs: each quantized on its own, the op alone between Q/DQ."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, y):
        return self.fn(x, y)


S = (1, 4, 7, 9)  # the default input: odd spatial sizes
E = (1, 4, 8, 8)  # even


def cases():
    """name -> (module factory, input shapes, ops annotated by OpAnnotator).

    Two forms. The op alone between the input's quantize and the output's dequantize (layers,
    elementwise ops, pooling, means, softmax, cat): both programs see the same integers, so the
    output is one requantization away. Ops that keep their input's grid (relu / relu6 /
    hardtanh, max pooling, shape ops) sit after a conv (conv -> op, NHWC inside the HTP): the
    conv's output is one requantization away and the op moves values without rounding again.
    (A layer after the op would multiply a one-step difference by its weights.)"""
    own = OWN_OUTPUT | SHARED_OUTPUT
    c = {}
    # conv2d forms
    c["conv2d_3x3_pad1"] = (lambda: conv(4, 8, padding=1), [E], own)
    c["conv2d_stride2"] = (lambda: conv(4, 8, stride=2, padding=1), [S], own)
    c["conv2d_dilation2"] = (lambda: conv(4, 8, padding=2, dilation=2), [(1, 4, 10, 10)], own)
    c["conv2d_groups2"] = (lambda: conv(4, 8, padding=1, groups=2), [E], own)
    c["conv2d_depthwise"] = (lambda: conv(8, 8, padding=1, groups=8), [(1, 8, 8, 8)], own)
    c["conv2d_depthwise_c33"] = (lambda: conv(33, 33, padding=1, groups=33), [(1, 33, 7, 9)], own)
    c["conv2d_1x1_c5_c33"] = (lambda: conv(5, 33, 1), [(1, 5, 7, 9)], own)
    c["conv2d_pad_1_2"] = (lambda: conv(4, 8, padding=(1, 2)), [S], own)
    c["conv2d_c3_c5"] = (lambda: conv(3, 5, padding=1), [(1, 3, 7, 9)], own)
    c["conv2d_1x1_spatial"] = (lambda: conv(33, 16, 1), [(1, 33, 1, 1)], own)
    c["conv2d_relu_fused"] = (lambda: nn.Sequential(conv(4, 8, padding=1), nn.ReLU()), [S], own - SHARED_OUTPUT)
    # linear
    c["linear"] = (lambda: nn.Linear(33, 10), [(1, 33)], own)
    c["linear_batch3"] = (lambda: nn.Linear(5, 7), [(3, 5)], own)
    # binary elementwise, two inputs on their own grids
    c["add"] = (lambda: Binary(torch.add), [S, S], own)
    c["mul"] = (lambda: Binary(torch.mul), [S, S], own)
    c["sub"] = (lambda: Binary(torch.sub), [S, S], own)
    c["add_c33_1x1"] = (lambda: Binary(torch.add), [(1, 33, 1, 1), (1, 33, 1, 1)], own)
    # activations that keep the grid, after a conv
    for name, fn in [("relu", F.relu), ("relu6", F.relu6), ("hardtanh", lambda t: F.hardtanh(t, -0.5, 0.5))]:
        c[name] = (lambda fn=fn: Chain(conv(4, 8, padding=1), fn), [S], own)
    c["relu_1x1_spatial_c5"] = (lambda: Chain(conv(5, 5, 1), F.relu), [(1, 5, 1, 1)], own)
    # bounds inside the grid: relu6 on a conv whose outputs pass 6, hardtanh(0, 0.5)
    c["relu6_wide"] = (lambda: Chain(scaled(conv(4, 8, padding=1), 8.0), F.relu6), [S], own)
    c["hardtanh_0_05"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.hardtanh(t, 0.0, 0.5)), [S], own)
    # activations with their own output grid, alone
    for name, fn in [("hardswish", F.hardswish), ("sigmoid", torch.sigmoid), ("tanh", torch.tanh)]:
        c[name] = (lambda fn=fn: Chain(fn=fn), [S], own)
    c["sigmoid_c33"] = (lambda: Chain(fn=torch.sigmoid), [(1, 33, 7, 9)], own)
    # pooling and means: max pooling after a conv, the averages alone
    c["max_pool2d_2x2"] = (lambda: Chain(conv(4, 8, padding=1), nn.MaxPool2d(2)), [E], own)
    c["max_pool2d_3x3_s2_p1_ceil"] = (lambda: Chain(conv(4, 8, padding=1), nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
                                      [S], own)
    c["max_pool2d_2x2_ceil_odd"] = (lambda: Chain(conv(4, 8, padding=1), nn.MaxPool2d(2, ceil_mode=True)), [S], own)
    c["avg_pool2d_2x2"] = (lambda: Chain(fn=nn.AvgPool2d(2)), [E], own)
    c["avg_pool2d_3x3_s2_p1"] = (lambda: Chain(fn=nn.AvgPool2d(3, 2, 1)), [S], own)
    c["avg_pool2d_3x3_s2_p1_nopad"] = (lambda: Chain(fn=nn.AvgPool2d(3, 2, 1, count_include_pad=False)), [S], own)
    c["adaptive_avg_pool2d_1x1"] = (lambda: Chain(fn=nn.AdaptiveAvgPool2d(1)), [(1, 5, 7, 9)], own)
    c["mean_keepdim"] = (lambda: Chain(fn=lambda t: t.mean((2, 3), keepdim=True)), [S], own)
    c["mean"] = (lambda: Chain(fn=lambda t: t.mean((2, 3))), [(1, 33, 7, 9)], own)
    # softmax over the last dim
    c["softmax_4d"] = (lambda: Chain(fn=lambda t: torch.softmax(t, -1)), [S], own)
    c["softmax_2d"] = (lambda: Chain(fn=lambda t: torch.softmax(t, -1)), [(1, 33)], own)
    # concat (inputs share one grid) and shape ops after a conv
    c["cat_channels"] = (lambda: Binary(lambda a, b: torch.cat([a, b], 1)), [(1, 3, 7, 9), (1, 5, 7, 9)], own)
    c["flatten"] = (lambda: Chain(conv(4, 5, padding=1), lambda t: torch.flatten(t, 1)), [S], own)
    c["reshape"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: t.reshape(1, 8, 9, 7)), [S], own)
    c["permute_hw"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: t.permute(0, 1, 3, 2)), [S], own)
    c["permute_nhwc"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: torch.flatten(t.permute(0, 2, 3, 1), 1)),
                         [S], own)
    # division (the divisor's input is made positive, away from zero: see make()), matrix products
    c["div"] = (lambda: Binary(torch.div), [S, S], own)
    c["matmul_2d"] = (lambda: Binary(torch.matmul), [(7, 9), (9, 5)], own)
    c["matmul_4d"] = (lambda: Binary(torch.matmul), [(1, 2, 7, 9), (1, 2, 9, 5)], own)
    c["bmm"] = (lambda: Binary(torch.bmm), [(3, 7, 9), (3, 9, 5)], own)
    # layer norm over the last dim, its weight and bias quantized like activations
    c["layer_norm"] = (lambda: Chain(fn=nn.LayerNorm(33)), [(1, 7, 33)], own)
    # padding and resizing after a conv (same grid)
    c["pad_constant"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.pad(t, (1, 2, 0, 1))), [S], own)
    c["pad_value"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.pad(t, (2, 0, 1, 1), value=0.25)), [S], own)
    c["upsample_nearest_x2"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.interpolate(t, scale_factor=2.0)),
                                [S], own)
    c["upsample_bilinear_x2"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.interpolate(
        t, scale_factor=2.0, mode="bilinear", align_corners=False)), [S], own)
    c["upsample_bilinear_align"] = (lambda: Chain(conv(4, 8, padding=1), lambda t: F.interpolate(
        t, size=(12, 16), mode="bilinear", align_corners=True)), [S], own)
    return c


def make(name, factory, shapes, own, out_dir, a16w8=False):
    torch.manual_seed(sum(map(ord, name)))
    model = factory().eval()
    gen = torch.Generator().manual_seed(1234 + len(name))
    # A divisor in [0.5, 3): its own grid keeps a few percent of precision, and the quotient a bounded range.
    def draw(gen):
        xs = [torch.randn(s, generator=gen) for s in shapes]
        if name.startswith("div"):
            xs[1] = xs[1].abs().clamp(max=2.5) + 0.5
        return tuple(xs)
    calib = [draw(gen) for _ in range(8)]
    xs = draw(torch.Generator().manual_seed(7))
    config, act = (CONFIG16, ACT16) if a16w8 else (CONFIG, ACT)
    quantizer = ComposableQuantizer([OpAnnotator(own, act), XNNPACKQuantizer().set_global(config)])
    captured = torch.export.export(model, xs).module()
    prepared = prepare_pt2e(captured, quantizer)
    with torch.no_grad():
        for t in calib:
            prepared(*t)
    quantized = convert_pt2e(prepared)
    ep = torch.export.export(quantized, xs)
    stem = name + ("_a16w8" if a16w8 else "")
    path = os.path.join(out_dir, stem + ".pt2")
    torch.export.save(ep, path)
    for i, x in enumerate(xs):  # <case>_input.npy, then <case>_input1.npy for a second input
        np.save(os.path.join(out_dir, stem + "_input" + (str(i) if i else "") + ".npy"), x.numpy().astype(np.float32))
    ops = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            k = str(n.target)
            ops[k] = ops.get(k, 0) + 1
    with torch.no_grad():
        err = (quantized(*xs) - model(*xs)).abs().max().item()
        if a16w8:
            np.save(os.path.join(out_dir, stem + "_float.npy"), model(*xs).numpy().astype(np.float32))
    short = ", ".join(f"{k.replace('quantized_decomposed.', 'qd.')} x{v}" for k, v in sorted(ops.items()))
    print(f"{stem}: {os.path.getsize(path)} bytes, int8 vs float max |diff| {err:.4f}; {short}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "test", "delegates", "qnn", "cases"))
    ap.add_argument("--only", default="")
    ap.add_argument("--a16w8-only", action="store_true", help="write only the a16w8 forms")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    only = set(filter(None, args.only.split(",")))
    failed = []
    for name, (factory, shapes, own) in cases().items():
        if only and name not in only:
            continue
        for a16w8 in [False, True] if name in A16W8 else [False]:
            if args.a16w8_only and not a16w8:
                continue
            try:
                make(name, factory, shapes, own, args.out, a16w8)
            except Exception:  # one case's failure leaves the others
                traceback.print_exc()
                failed.append(name + ("_a16w8" if a16w8 else ""))
    print(f"torch {torch.__version__}; wrote {args.out}; failed: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
