#!/usr/bin/env python3
"""Exports the small models behind test/hardening/exported_write_targets_test: programs whose
instructions write memory the exporter must get right.

- t5_tiny: a Hugging Face T5 encoder (tiny config, seeded weights). T5's relative-position
  bias depends only on the sequence length, so Ember's constant folding bakes most of it;
  the bucket computation writes a buffer in place, which once made a kernel write into a
  constant. Input: token ids [1, 6]; output: last_hidden_state.
- input_mutation: `x.add_(y); return x * 2` -- an in-place write into a user input, which the
  program must declare (Method.mutable_inputs).

Each directory gets model.pt2, input_<i>.npy and output_<i>.npy (eager PyTorch).
Usage: python3 tools/models/export_write_target_models.py [OUT_DIR]
(default test/hardening/models; needs torch + transformers)
"""
import os
import sys

import numpy as np
import torch
import transformers


class T5Encoder(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids).last_hidden_state


class InputMutation(torch.nn.Module):
    def forward(self, x, y):
        x.add_(y)
        return x * 2


def save(out, name, model, inputs):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    torch.export.save(torch.export.export(model, tuple(t.clone() for t in inputs)), os.path.join(d, "model.pt2"))
    for i, t in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), t.numpy())
    with torch.no_grad():
        np.save(os.path.join(d, "output_0.npy"), model(*[t.clone() for t in inputs]).numpy())
    print("wrote", d)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "test/hardening/models"
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=32, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2,
                                   relative_attention_num_buckets=8)
    save(out, "t5_tiny", T5Encoder(transformers.T5EncoderModel(config).eval()).eval(),
         [torch.randint(0, 32, (1, 6))])
    save(out, "input_mutation", InputMutation(), [torch.randn(2, 3), torch.randn(2, 3)])


if __name__ == "__main__":
    main()
