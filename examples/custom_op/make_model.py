#!/usr/bin/env python3
"""A custom operator defined with torch.library, a model that calls it, exported.

Writes, next to this script (or into OUT):
  model.pt2          torch.export of Model (seeded weights)
  input_0.npy        a seeded input
  output_0.npy       eager PyTorch's output on it (the test's reference)
  op_schemas.txt     the operator's signature as PyTorch registered it: the exporter's
                     --op-schemas file, so the schema has one source, this definition

Usage: make_model.py [OUT]   (needs PyTorch 2.4+; the committed files came from 2.11)
"""
import os
import sys

import numpy as np
import torch


@torch.library.custom_op("ember_example::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
    return torch.tanh(x) * scale + shift


@scaled_tanh.register_fake
def _(x, scale=1.0, shift=0.0):
    return torch.empty_like(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        # `shift` is left to its default: the exporter fills it in from the schema.
        return self.fc2(scaled_tanh(self.fc1(x), scale=2.5))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(3, 16)
    with torch.no_grad():
        ref = model(x)
    ep = torch.export.export(model, (x,))
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    np.save(os.path.join(out, "input_0.npy"), x.numpy())
    np.save(os.path.join(out, "output_0.npy"), ref.numpy())
    with open(os.path.join(out, "op_schemas.txt"), "w") as f:
        f.write("# written by make_model.py from PyTorch's registration\n")
        f.write(str(torch.ops.ember_example.scaled_tanh.default._schema) + "\n")
    print("torch", torch.__version__, "->", out)


if __name__ == "__main__":
    main()
