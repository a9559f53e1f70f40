#!/usr/bin/env python3
"""Writes the recurrent and weight-norm test models under test/models/recurrent/ (checked in;
the tests never run Python): seeded random weights, eval mode, torch.export (training IR),
torch.export.save.

For each model NAME: OUT/NAME/model.pt2, input_<i>.npy (seeded) and output_<i>.npy (eager
PyTorch on those inputs; every output of the module, e.g. GRU's (output, h_n)).

Packed sequences (aten::gru.data & co.) cannot be traced by torch.export (the op's meta
function guards on batch_sizes' values), so for those OUT/packed/NAME/ holds the eager op's
arguments and results as .npy files instead (data, batch_sizes, hx, params_<k>, output_<i>)
for a kernel-level test; the eager results are cross-checked here against nn.GRU/RNN/LSTM run
on the padded sequence with pack_padded_sequence.

Usage: export_recurrent.py [OUT]   (default: test/models/recurrent next to this script's repo)
       export_recurrent.py --wav2vec2 OUT   (a tiny transformers Wav2Vec2Model, not checked in)"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils import parametrizations
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Recurrent(nn.Module):
    """Returns every output of the layer (flattening LSTM's (h_n, c_n))."""

    def __init__(self, layer, with_h0):
        super().__init__()
        self.layer = layer
        self.with_h0 = with_h0

    def forward(self, x, *h0):
        out, state = self.layer(x, *h0) if self.with_h0 else self.layer(x)
        if isinstance(state, tuple):
            return (out,) + state
        return out, state


class WeightNormConv(nn.Module):
    """conv1d -> gelu -> conv1d, both convs weight-normalised (Wav2Vec2's positional conv
    uses dim=2 over a grouped conv)."""

    def __init__(self, api, dim):
        super().__init__()
        self.a = nn.Conv1d(4, 6, 3, padding=1)
        self.b = nn.Conv1d(6, 6, 5, padding=2, groups=2)
        wn = parametrizations.weight_norm if api == "parametrizations" else nn.utils.weight_norm
        self.a = wn(self.a, name="weight", dim=dim)
        self.b = wn(self.b, name="weight", dim=2 if dim is not None else None)

    def forward(self, x):
        return self.b(nn.functional.gelu(self.a(x)))


class GruHead(nn.Module):
    """A keyword-spotting-style GRU with a linear head (the head goes to XNNPACK)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(6, 8, batch_first=True, bidirectional=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        out, h_n = self.gru(x)
        return torch.relu(self.head(out)), h_n


def randomize(module):
    # Larger-than-default weights so the nonlinearities are exercised away from 0.
    with torch.no_grad():
        for p in module.parameters():
            p.uniform_(-0.6, 0.6)
    return module


def models():
    m = {}
    torch.manual_seed(1)
    m["gru_2layer_bidir_batch_first"] = (
        Recurrent(randomize(nn.GRU(5, 6, num_layers=2, bidirectional=True, batch_first=True)), False),
        (torch.randn(3, 7, 5),))
    torch.manual_seed(2)
    m["gru_h0"] = (Recurrent(randomize(nn.GRU(4, 5)), True), (torch.randn(6, 2, 4), torch.randn(1, 2, 5)))
    torch.manual_seed(3)
    m["gru_no_bias_h0"] = (Recurrent(randomize(nn.GRU(3, 4, num_layers=2, bias=False)), True),
                           (torch.randn(5, 2, 3), torch.randn(2, 2, 4)))
    torch.manual_seed(4)
    m["rnn_tanh_2layer_bidir"] = (
        Recurrent(randomize(nn.RNN(4, 5, num_layers=2, bidirectional=True, nonlinearity="tanh")), True),
        (torch.randn(6, 3, 4), torch.randn(4, 3, 5)))
    torch.manual_seed(5)
    m["rnn_relu_2layer_bidir"] = (
        Recurrent(randomize(nn.RNN(4, 5, num_layers=2, bidirectional=True, nonlinearity="relu", batch_first=True)),
                  False),
        (torch.randn(3, 6, 4),))
    torch.manual_seed(8)
    m["gru_linear_head"] = (randomize(GruHead()), (torch.randn(2, 9, 6),))
    torch.manual_seed(6)
    m["lstm_proj_bidir"] = (
        Recurrent(randomize(nn.LSTM(4, 6, num_layers=2, bidirectional=True, proj_size=3)), False),
        (torch.randn(5, 2, 4),))
    for api, dim, name in (("parametrizations", 0, "weight_norm_parametrizations"),
                           ("utils", 0, "weight_norm_utils"),
                           ("parametrizations", None, "weight_norm_whole_tensor")):
        torch.manual_seed(7)
        m[name] = (WeightNormConv(api, dim), (torch.randn(1, 4, 16),))
        # Make g differ from ||v|| so that a missing g (or norm) shows.
        with torch.no_grad():
            for p_name, p in m[name][0].named_parameters():
                if p_name.endswith("original0") or p_name.endswith("weight_g"):
                    p.mul_(torch.empty_like(p).uniform_(0.5, 1.5))
    return m


def save_model(out_root, name, module, inputs):
    module = module.eval()
    with torch.no_grad():
        ref = module(*inputs)
    if isinstance(ref, torch.Tensor):
        ref = (ref,)
    ep = torch.export.export(module, inputs)
    out = os.path.join(out_root, name)
    os.makedirs(out, exist_ok=True)
    torch.export.save(ep, os.path.join(out, "model.pt2"))
    for i, x in enumerate(inputs):
        np.save(os.path.join(out, f"input_{i}.npy"), x.numpy())
    for i, y in enumerate(ref):
        np.save(os.path.join(out, f"output_{i}.npy"), y.numpy())
    ops = sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"})
    print(f"{name}: {os.path.getsize(os.path.join(out, 'model.pt2'))} bytes, ops {ops}")


def save_packed(out_root, name, layer, lengths, input_size, op):
    """Eager aten::<op>.data on a packed batch, cross-checked against the module on the
    padded batch (pack_padded_sequence), saved as .npy arguments and results."""
    layer = randomize(layer).eval()
    T, B = max(lengths), len(lengths)
    dirs = 2 if layer.bidirectional else 1
    x = torch.randn(T, B, input_size)
    packed = pack_padded_sequence(x, torch.tensor(lengths), enforce_sorted=True)
    state = 3 if isinstance(layer, nn.LSTM) else 1
    real_h = layer.proj_size if isinstance(layer, nn.LSTM) and layer.proj_size > 0 else layer.hidden_size
    h0 = torch.randn(layer.num_layers * dirs, B, real_h)
    c0 = torch.randn(layer.num_layers * dirs, B, layer.hidden_size) if state == 3 else None
    params = [p.detach() for p in layer._flat_weights]
    hx = [h0, c0] if state == 3 else h0
    with torch.no_grad():
        results = getattr(torch.ops.aten, op).data(packed.data, packed.batch_sizes, hx, params, layer.bias,
                                                   layer.num_layers, 0.0, False, layer.bidirectional)
        module_out, module_state = layer(packed, (h0, c0) if state == 3 else h0)
    # Cross-check: the op's packed output equals the module's (same semantics).
    assert torch.allclose(results[0], module_out.data, atol=1e-6)
    module_state = module_state if isinstance(module_state, tuple) else (module_state,)
    for got, want in zip(results[1:], module_state):
        assert torch.allclose(got, want, atol=1e-6)
    padded, _ = pad_packed_sequence(module_out)
    assert padded.shape == (T, B, dirs * real_h)
    out = os.path.join(out_root, "packed", name)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "data.npy"), packed.data.numpy())
    np.save(os.path.join(out, "batch_sizes.npy"), packed.batch_sizes.numpy().astype(np.int64))
    np.save(os.path.join(out, "h0.npy"), h0.numpy())
    if c0 is not None:
        np.save(os.path.join(out, "c0.npy"), c0.numpy())
    for k, p in enumerate(params):
        np.save(os.path.join(out, f"params_{k}.npy"), p.numpy())
    for i, r in enumerate(results):
        np.save(os.path.join(out, f"output_{i}.npy"), r.numpy())
    with open(os.path.join(out, "config.txt"), "w") as f:
        f.write(f"op {op}\nhas_biases {int(layer.bias)}\nnum_layers {layer.num_layers}\n"
                f"bidirectional {int(layer.bidirectional)}\n")
    print(f"packed/{name}: batch_sizes {packed.batch_sizes.tolist()}")


def save_wav2vec2(out_root):
    """A tiny transformers Wav2Vec2Model (weight-normalised positional conv, dim=2), for a manual
    end-to-end check: `export_recurrent.py --wav2vec2 OUT` (not part of the checked-in data)."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    torch.manual_seed(20)
    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                         num_conv_pos_embedding_groups=4, do_stable_layer_norm=False, feat_extract_norm="group")
    model = Wav2Vec2Model(cfg).eval()
    save_model(out_root, "wav2vec2_tiny", WrapLastHidden(model), (torch.randn(1, 800),))


class WrapLastHidden(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x).last_hidden_state


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--wav2vec2":
        save_wav2vec2(sys.argv[2])
        return
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out_root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "test", "models", "recurrent")
    for name, (module, inputs) in models().items():
        save_model(out_root, name, module, inputs)
    torch.manual_seed(10)
    save_packed(out_root, "gru_bidir_2layer", nn.GRU(3, 4, num_layers=2, bidirectional=True), [5, 3, 3, 1], 3, "gru")
    torch.manual_seed(11)
    save_packed(out_root, "rnn_tanh_bidir", nn.RNN(3, 4, bidirectional=True), [4, 2, 1], 3, "rnn_tanh")
    torch.manual_seed(12)
    save_packed(out_root, "rnn_relu_no_bias", nn.RNN(3, 4, num_layers=2, nonlinearity="relu", bias=False),
                [3, 3, 2], 3, "rnn_relu")
    torch.manual_seed(13)
    save_packed(out_root, "lstm_proj_bidir", nn.LSTM(3, 5, bidirectional=True, proj_size=2), [4, 4, 2], 3, "lstm")


if __name__ == "__main__":
    main()
